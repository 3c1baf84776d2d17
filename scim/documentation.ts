import { escapeHtml, page } from '../platform/http/html';

/**
 * What a SCIM client's administrator needs to know about this service, at the ServiceProviderConfig's
 * `documentationUri`: the rules it applies beyond RFC 7643/7644.
 */
export function scimDocumentationPage(scimUrl: string): string {
  const items = [
    `Base URL: <code>${escapeHtml(scimUrl)}</code>, with <code>Authorization: Bearer &lt;SCIM token&gt;</code> (an administrator creates one with <code>POST /api/v1/scim/tokens</code>).`,
    '<strong>Creating a user provisions it</strong> into every downstream application (Try, then Confirm); a refusal by any of them answers 422 with its reason, and the user does not exist.',
    '<strong>DELETE removes the SCIM resource, not the record.</strong> <code>DELETE /Users/{id}</code> deactivates the user and removes it from every application; afterwards the user answers 404, is left out of filters and groups, and its record stays, deactivated, for audit and the admin API. Its userName and e-mail stay taken: a new user with either answers 409 naming the kept user, which an administrator deletes for good with <code>DELETE /api/v1/profile/{id}</code> to free them. <code>active: false</code> deactivates without deleting; <code>active: true</code> provisions the user again.',
    "<strong>An e-mail is required</strong>: every application receives the user's e-mail. The primary one (else the work one, else the first) is the sign-in e-mail; every e-mail is kept with its type and primary, and at most one may be primary. <code>emails</code> and <code>active</code> cannot be removed.",
    "The <strong>enterprise extension</strong> (<code>urn:ietf:params:scim:schemas:extension:enterprise:2.0:User</code>) is kept and reaches every application as custom attributes under plain names (<code>employeeNumber</code>, <code>costCenter</code>, <code>organization</code>, <code>division</code>, <code>department</code>, <code>manager</code> as the manager's id).",
    'Every attribute /Schemas publishes is kept and answered as sent (<code>name</code> with all six sub-attributes, the enterprise <code>manager</code> with its <code>$ref</code> and <code>displayName</code>, group members with theirs, in their order). A PATCH path that names nothing /Schemas publishes is a 400 <code>invalidPath</code>; attributes of the core User schema the service does not keep (<code>displayName</code>, <code>phoneNumbers</code>, …) are accepted and ignored. Groups hold users only.',
    'Filters: <code>eq</code> with <code>and</code>/<code>or</code> on userName, externalId, emails, active, id, name, the enterprise attributes (groups: displayName, externalId, id). <code>attributes</code>/<code>excludedAttributes</code> and search over POST at <code>/Users/.search</code> and <code>/Groups/.search</code> are supported; bulk and sorting are not.',
  ];
  return page('SCIM 2.0 at this service', `<ul>${items.map((item) => `<li><p>${item}</p></li>`).join('')}</ul>`);
}
