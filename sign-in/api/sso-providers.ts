import { X509Certificate } from 'node:crypto';
import type { Request, Response } from 'express';
import { parsedPathParam, pathParam, type Operations } from '../../platform/http/operations';
import { z } from 'zod';
import { callbackUrlProblem, type AllowList } from '../../platform/security/callback-address';
import type { KeyRing } from '../../platform/security/data-protection';
import { isForbiddenKey } from '../../platform/security/object-keys';
import type { Db } from '../../platform/store/database';
import {
  deleteSsoProvider,
  domainsByProvider,
  findOidcProvider,
  findSamlProvider,
  listOidcProviders,
  listSamlProviders,
  putOidcProvider,
  putSamlProvider,
  type OidcProviderRow,
  type SamlProviderRow,
} from '../store/sso-provider-configs';
import { sendProblem, type Problem } from '../../platform/http/problem';
import { hasControlCharacter } from '../../platform/security/storable-text';

const providerId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'provider ids use letters, digits, ".", "_" and "-" (at most 64)')
  .refine((id) => !isForbiddenKey(id), 'this provider id is a reserved name');
const domain = z
  .string()
  .max(253)
  .regex(/^(?=.*\.)[a-z0-9-]+(\.[a-z0-9-]+)+$/i, 'must be a domain name such as example.com')
  .transform((d) => d.toLowerCase());
// A name reaches the sign-in pages and the log as it is: no control characters (ESC, CR/LF).
const name = z
  .string()
  .min(1)
  .max(200)
  .refine((text) => !hasControlCharacter(text), 'must not contain control characters (ESC, CR, LF, tab and the like)');
const url = z.string().max(2000).pipe(z.url());

/** What both kinds share: identity, SSO domains, the switch, and the source's scheme names. */
const common = {
  id: providerId.optional(),
  name,
  domains: z.array(domain).max(100).default([]),
  enabled: z.boolean().default(true),
  /** The source's LoginProvider scheme names that mean this provider, besides its id. */
  loginProviderNames: z.array(name).max(20).default([]),
  /**
   * Whether the provider may create accounts for addresses outside its SSO domains. Off by default: a provider
   * speaks only for its own domains, since any tenant of a multi-tenant IdP can assert any address it likes.
   */
  allowOtherDomains: z.boolean().default(false),
};

export const oidcProviderSchema = z
  .object({
    ...common,
    authority: url,
    clientId: z.string().min(1).max(200),
    /** Plaintext, sealed at rest; omitted keeps the stored one, null removes it (a public client). */
    clientSecret: z.string().min(1).max(1000).nullable().optional(),
    scopes: z.array(z.string().min(1).max(100)).max(20).default(['openid', 'email', 'profile']),
  })
  .strict();

/** PEM or bare base64 of an X.509 certificate; stored as given once it parses. */
const certificate = z
  .string()
  .max(20_000)
  .refine((value) => {
    const body = value.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
    try {
      new X509Certificate(Buffer.from(body, 'base64'));
      return true;
    } catch {
      return false;
    }
  }, 'must be an X.509 certificate, PEM or base64');

export const samlProviderSchema = z
  .object({
    ...common,
    entityId: z.string().min(1).max(1000),
    singleSignOnUrl: url,
    signingCertificate: certificate,
    allowIdpInitiated: z.boolean().default(false),
    /** The SP entity id the IdP already trusts; default {Api:PublicUrl}/saml/{id}. */
    spEntityId: z.string().min(1).max(1000).nullable().optional(),
  })
  .strict();

interface Kind<Row, Body> {
  label: 'OIDC' | 'SAML';
  key: 'oidc' | 'saml';
  schema: z.ZodType<Body>;
  find(db: Db, id: string): Promise<Row | undefined>;
  list(db: Db): Promise<Row[]>;
  view(row: Row): Record<string, unknown>;
  /** A refusal (the field and why) before anything is written. */
  refuse?(body: Body): string | undefined;
  put(
    db: Db,
    id: string,
    body: Body,
    domains: string[],
    mode: 'create' | 'replace',
  ): ReturnType<typeof putSamlProvider>;
}

/** The operations on a kind of upstream provider: list, read, create (POST), replace (PUT), delete. */
function providersOperations<Row extends { id: string }, Body extends { id?: string; domains: string[] }>(
  db: Db,
  kind: Kind<Row, Body>,
): Operations {
  // The noun of the kind's operationIds in the route table (listOidcProviders, getSamlProvider, …).
  const noun = `${kind.key === 'oidc' ? 'Oidc' : 'Saml'}Provider`;
  const notFound = (id: string): Problem => ({
    status: 404,
    title: 'Provider not found',
    detail: `no ${kind.label} provider ${id}`,
  });

  async function answerWith(res: Response, id: string, status = 200) {
    const row = await kind.find(db, id);
    if (!row) return sendProblem(res, notFound(id));
    res.status(status).json({ ...kind.view(row), domains: (await domainsByProvider(db, kind.key)).get(id) ?? [] });
  }

  async function write(req: Request, res: Response, mode: 'create' | 'replace') {
    const body = kind.schema.parse(req.body);
    const id = mode === 'replace' ? parsedPathParam(req, 'id', providerId) : body.id;
    const invalid = (detail: string) => sendProblem(res, { status: 400, title: 'Invalid request', detail });
    if (!id) return invalid('id: required');
    if (mode === 'replace' && body.id !== undefined && body.id !== id)
      return invalid(`id: the body says ${body.id}, the path ${id}`);
    const refused = kind.refuse?.(body);
    if (refused) return invalid(refused);
    const outcome = await kind.put(db, id, body, [...new Set(body.domains)], mode);
    if (outcome.status === 'exists')
      return sendProblem(res, {
        status: 409,
        title: 'Provider exists',
        detail: `${kind.label} provider ${id} exists already; PUT replaces it`,
      });
    if (outcome.status === 'missing') return sendProblem(res, notFound(id));
    if (outcome.status === 'domain-taken')
      return sendProblem(res, {
        status: 409,
        title: 'Domain taken',
        detail: `domains: ${outcome.domain} belongs to ${outcome.holder}`,
      });
    if (mode === 'create') res.location(`${req.path}/${id}`);
    await answerWith(res, id, outcome.status === 'created' ? 201 : 200);
  }

  return {
    [`list${noun}s`]: async (_req, res) => {
      const domains = await domainsByProvider(db, kind.key);
      res.json((await kind.list(db)).map((row) => ({ ...kind.view(row), domains: domains.get(row.id) ?? [] })));
    },
    [`get${noun}`]: (req, res) => answerWith(res, pathParam(req, 'id')),
    [`create${noun}`]: (req, res) => write(req, res, 'create'),
    [`replace${noun}`]: (req, res) => write(req, res, 'replace'),
    [`delete${noun}`]: async (req, res) => {
      if (!(await deleteSsoProvider(db, kind.key, pathParam(req, 'id'))))
        return sendProblem(res, notFound(pathParam(req, 'id')));
      res.status(204).end();
    },
  };
}

/** `/api/v1/sso/oidc-providers`: upstream OpenID providers; the client secret is write-only and sealed. */
export function oidcProvidersOperations({ db, ring, allow }: { db: Db; ring: KeyRing; allow: AllowList }): Operations {
  return providersOperations<OidcProviderRow, z.infer<typeof oidcProviderSchema>>(db, {
    label: 'OIDC',
    key: 'oidc',
    schema: oidcProviderSchema,
    find: findOidcProvider,
    list: listOidcProviders,
    view: (row) => ({
      id: row.id,
      name: row.name,
      authority: row.authority,
      clientId: row.client_id,
      hasClientSecret: row.client_secret !== null,
      scopes: row.scopes,
      enabled: row.enabled,
      loginProviderNames: row.login_provider_names,
      allowOtherDomains: row.allow_other_domains,
    }),
    // The service fetches the authority's discovery document and every endpoint it names: an internal address is
    // refused here and again at connect time.
    refuse: (body) => {
      const problem = callbackUrlProblem(body.authority, allow);
      return problem ? `authority: refused: ${problem}` : undefined;
    },
    put: (store, id, body, domains, mode) =>
      putOidcProvider(
        store,
        ring,
        {
          id,
          name: body.name,
          authority: body.authority,
          client_id: body.clientId,
          clientSecret: body.clientSecret,
          scopes: body.scopes,
          enabled: body.enabled,
          login_provider_names: body.loginProviderNames,
          allow_other_domains: body.allowOtherDomains,
        },
        domains,
        mode,
      ),
  });
}

/** `/api/v1/sso/saml-providers`: SAML 2.0 identity providers. */
export function samlProvidersOperations({ db }: { db: Db }): Operations {
  return providersOperations<SamlProviderRow, z.infer<typeof samlProviderSchema>>(db, {
    label: 'SAML',
    key: 'saml',
    schema: samlProviderSchema,
    find: findSamlProvider,
    list: listSamlProviders,
    view: (row) => ({
      id: row.id,
      name: row.name,
      entityId: row.entity_id,
      singleSignOnUrl: row.sso_url,
      signingCertificate: row.signing_certificate,
      enabled: row.enabled,
      allowIdpInitiated: row.allow_idp_initiated,
      spEntityId: row.sp_entity_id,
      loginProviderNames: row.login_provider_names,
      allowOtherDomains: row.allow_other_domains,
    }),
    put: (store, id, body, domains, mode) =>
      putSamlProvider(
        store,
        {
          id,
          name: body.name,
          entity_id: body.entityId,
          sso_url: body.singleSignOnUrl,
          signing_certificate: body.signingCertificate,
          enabled: body.enabled,
          allow_idp_initiated: body.allowIdpInitiated,
          sp_entity_id: body.spEntityId ?? null,
          login_provider_names: body.loginProviderNames,
          allow_other_domains: body.allowOtherDomains,
        },
        domains,
        mode,
      ),
  });
}
