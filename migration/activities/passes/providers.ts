import type { Selectable } from 'kysely';
import type { SourceDatabase } from '../../source/source-schema';
import { protectText } from '../../../platform/security/data-protection';
import { insertOidcProviders, insertSamlProviders, insertSsoDomains } from '../../store/migrated-configuration';
import { pageById } from '../id-pages';
import { countWrites, type Pass, type PassContext, type PageResult } from '../types';

/** `AllowedDomains` is a comma-separated list: one SSO domain record per domain. */
export function splitDomains(value: string | null): string[] {
  return [
    ...new Set(
      (value ?? '')
        .split(',')
        .map((d) => d.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
}

async function writeDomains(
  ctx: PassContext,
  page: PageResult,
  kind: 'saml' | 'oidc',
  providers: Array<{ Id: string; AllowedDomains: string | null }>,
): Promise<void> {
  const rows = providers.flatMap((p) =>
    splitDomains(p.AllowedDomains).map((domain) => ({ domain, provider_kind: kind, provider_id: p.Id })),
  );
  if (rows.length === 0) return;
  for (const holder of await insertSsoDomains(ctx.target, rows)) {
    const row = rows.find((r) => r.domain === holder.domain)!;
    if (holder.provider_kind !== kind || holder.provider_id !== row.provider_id) {
      page.warnings.push(
        `SSO domain ${row.domain} of ${kind} provider ${row.provider_id} already belongs to ${holder.provider_kind} provider ${holder.provider_id}`,
      );
    }
  }
}

/**
 * The SAML and OIDC provider passes: one implementation, two entries of the pass plan (the report, the status
 * endpoint and the child workflow ids name both). Each kind reads its own table and writes its own, then its domains.
 */
function providersPass<T extends 'SamlProviderConfigurations' | 'OidcProviderConfigurations'>(
  kind: 'saml' | 'oidc',
  table: T,
  write: (ctx: PassContext, providers: Selectable<SourceDatabase[T]>[]) => Promise<number>,
): Pass {
  return async (ctx, cursor) => {
    const { rows: providers, page } = await pageById(ctx, table, cursor);
    if (providers.length === 0 || ctx.options.dryRun) return page;
    countWrites(page, providers.length, await write(ctx, providers));
    // Both provider tables have AllowedDomains; TypeScript cannot see it through the generic table name.
    await writeDomains(ctx, page, kind, providers as Array<{ Id: string; AllowedDomains: string | null }>);
    return page;
  };
}

/** The columns both provider tables share. */
const providerColumns = (p: { Id: string; Name: string; Enabled: boolean }) => ({
  id: p.Id,
  name: p.Name,
  enabled: p.Enabled,
});

export const samlProvidersPass = providersPass('saml', 'SamlProviderConfigurations', (ctx, providers) =>
  insertSamlProviders(
    ctx.target,
    providers.map((p) => ({
      ...providerColumns(p),
      entity_id: p.EntityId,
      sso_url: p.SingleSignOnUrl,
      signing_certificate: p.SigningCertificate,
    })),
  ),
);

export const oidcProvidersPass = providersPass('oidc', 'OidcProviderConfigurations', (ctx, providers) =>
  insertOidcProviders(
    ctx.target,
    providers.map((p) => ({
      ...providerColumns(p),
      authority: p.Authority,
      client_id: p.ClientId,
      // Sealed where the worker holds the key ring; sign-in seals any left in plaintext at its next start.
      client_secret:
        p.ClientSecret && ctx.dataProtection ? protectText(p.ClientSecret, ctx.dataProtection) : p.ClientSecret,
      client_secret_sealed: Boolean(p.ClientSecret && ctx.dataProtection),
      scopes: JSON.stringify((p.Scopes ?? '').split(/[\s,]+/).filter(Boolean)),
    })),
  ),
);
