import { parseAllowList } from '../platform/security/callback-address';
import { adminActorOf, type AdminCheck } from '../platform/http/identity-admin';
import { recordAuditEvent } from '../sign-in/store/audit-events';
import type { Operations } from '../platform/http/operations';
import { apiWorkflowRunner, type ApiDependencies } from '../composition/api-dependencies';
import { clientsOperations } from '../sign-in/api/client-endpoints';
import { oidcProvidersOperations, samlProvidersOperations } from '../sign-in/api/sso-providers';
import { registerOperations } from '../sign-in/api/register';
import { createRegistration } from '../sign-in/registration';
import { accountAdminOperations } from '../sign-in/api/account-admin';
import { migrationStatusOperations } from '../migration/api/status';
import { profileOperations } from '../provisioning/api/profile';
import { userDirectoryOperations } from '../provisioning/api/user-directory';
import { provisioningAppsOperations } from '../provisioning/api/app-endpoints';
import { createSignOut } from '../sign-in/sign-out-notices';
import { scimTokensOperations } from '../scim/tokens';
import { scimOperations } from '../scim/scim-router';
import { healthOperations } from './routes/health';
import { apiDocumentOperations } from './routes/api-docs';

/**
 * The handlers of the route table (api/openapi/routes.ts) by operationId, each surface's built from the API's
 * dependencies. A surface a configuration leaves out has none, and its routes answer 404 (the table names the setting
 * in each such route's `absent`).
 */
export function routeHandlers(deps: ApiDependencies, adminCheck: AdminCheck): Operations {
  const { config, db, temporal, http, apps, publicUrl, dataProtection, signIn, readThrough } = deps;
  const run = deps.run ?? apiWorkflowRunner(temporal, config);
  const allow = parseAllowList(config.Auth.AllowedInternalTargets);
  // The admin's reset mail leads to the sign-in pages: without them, there is none.
  const mails = signIn && deps.mails;
  const { PasswordPolicy: passwordPolicy } = config.Auth;
  return {
    ...healthOperations({ db, temporal }),
    ...apiDocumentOperations(publicUrl),
    ...profileOperations({ db, run, passwordPolicy, issuer: publicUrl }),
    ...userDirectoryOperations({
      db,
      run,
      issuer: publicUrl,
      audit: (req, userId, fields) =>
        recordAuditEvent(db, {
          type: 'profile-updated',
          userId,
          actor: adminActorOf(req),
          clientAddress: req.ip,
          detail: { fields: fields.join(',') },
        }),
    }),
    // Auth:AllowRegistration false closes registration: the route answers 404 naming the setting, as the page is gone.
    ...(config.Auth.AllowRegistration &&
      registerOperations({
        registration: deps.registration ?? createRegistration({ config, db, run, mails, readThrough }),
      })),
    ...scimTokensOperations({ db }),
    ...accountAdminOperations({ db, mails, signOut: createSignOut({ db, run, issuer: publicUrl }) }),
    ...clientsOperations({ db, apps, allow }),
    // Upstream providers' client secrets are sealed at rest: the routes exist where the key ring does.
    ...(dataProtection && oidcProvidersOperations({ db, ring: dataProtection, allow })),
    ...samlProvidersOperations({ db }),
    // The management routes exist only with the store-backed provider.
    ...(config.Provisioning.AppProvider === 'Store' &&
      provisioningAppsOperations({ db, ring: dataProtection!, http, allow })),
    ...(config.Migration.MapStatusEndpoint && migrationStatusOperations({ config, db, isAdmin: adminCheck })),
    ...scimOperations({
      db,
      run,
      passwordPolicy,
      scimUrl: `${publicUrl}/scim/v2`,
      documentationUrl: `${publicUrl}/docs/scim`,
      issuer: publicUrl,
    }),
  };
}
