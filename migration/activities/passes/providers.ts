import type { Selectable } from 'kysely';
import type { SourceDatabase } from '../../source/source-schema';
import { protectText } from '../../../platform/security/data-protection';
import {
  insertOidcProviders,
  insertSamlProviders,
  insertSsoDomains,
  ssoDomainHolders,
} from '../../store/migrated-configuration';
import { withoutCommitting } from '../../store/uncommitted';
import { idPage } from '../../source/configuration-reads';
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

type DomainRow = { domain: string; provider_kind: 'saml' | 'oidc'; provider_id: string };
type ProviderDomains = Array<{ Id: string; AllowedDomains: string | null }>;

const domainRows = (kind: 'saml' | 'oidc', providers: ProviderDomains): DomainRow[] =>
  providers.flatMap((p) =>
    splitDomains(p.AllowedDomains).map((domain) => ({ domain, provider_kind: kind, provider_id: p.Id })),
  );

function warnOfHolders(
  page: PageResult,
  rows: DomainRow[],
  holders: Array<Omit<DomainRow, 'provider_kind'> & { provider_kind: string }>,
) {
  for (const holder of holders) {
    const row = rows.find((r) => r.domain === holder.domain)!;
    if (holder.provider_kind !== row.provider_kind || holder.provider_id !== row.provider_id) {
      page.warnings.push(
        `SSO domain ${row.domain} of ${row.provider_kind} provider ${row.provider_id} already belongs to ${holder.provider_kind} provider ${holder.provider_id}`,
      );
    }
  }
}

async function writeDomains(ctx: PassContext, page: PageResult, kind: 'saml' | 'oidc', providers: ProviderDomains) {
  const rows = domainRows(kind, providers);
  if (rows.length === 0) return;
  warnOfHolders(page, rows, await insertSsoDomains(ctx.target, rows));
}

const PROVIDER_TABLES = { saml: 'SamlProviderConfigurations', oidc: 'OidcProviderConfigurations' } as const;

/** Every provider of a kind, in key order (provider tables are small); none where the source lacks the table. */
async function allProviders(ctx: PassContext, kind: 'saml' | 'oidc'): Promise<ProviderDomains> {
  const all: ProviderDomains = [];
  for (let after: string | undefined; ;) {
    const rows = (await idPage(ctx.source, PROVIDER_TABLES[kind], after, ctx.options.pageSize).catch(
      () => [],
    )) as ProviderDomains;
    all.push(...rows);
    if (rows.length < ctx.options.pageSize) return all;
    after = rows[rows.length - 1].Id;
  }
}

/**
 * A dry run writes no domain, so it cannot meet the holders its own earlier writes would be: each domain's holder
 * is the target's, else the first claimant in the real run's order (the SAML pass before the OIDC pass, each in key
 * order), and a page's domain held by another provider gets the real run's warning.
 */
async function simulateDomains(ctx: PassContext, page: PageResult, kind: 'saml' | 'oidc', providers: ProviderDomains) {
  const rows = domainRows(kind, providers);
  if (rows.length === 0) return;
  const holders = new Map<string, { domain: string; provider_kind: string; provider_id: string }>();
  for (const held of await ssoDomainHolders(ctx.target, [...new Set(rows.map((r) => r.domain))]))
    holders.set(held.domain, held);
  for (const earlier of kind === 'oidc' ? (['saml', 'oidc'] as const) : (['saml'] as const))
    for (const claim of domainRows(earlier, await allProviders(ctx, earlier)))
      if (!holders.has(claim.domain)) holders.set(claim.domain, claim);
  warnOfHolders(
    page,
    rows,
    rows.flatMap((r) => holders.get(r.domain) ?? []),
  );
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
    if (providers.length === 0) return page;
    // Both provider tables have AllowedDomains; TypeScript cannot see it through the generic table name.
    const domains = providers as ProviderDomains;
    if (ctx.options.dryRun) {
      // The providers are written as the real run would and rolled back: the counts are the real run's.
      countWrites(
        page,
        providers.length,
        await withoutCommitting(ctx.target, (target) => write({ ...ctx, target }, providers)),
      );
      await simulateDomains(ctx, page, kind, domains);
      return page;
    }
    countWrites(page, providers.length, await write(ctx, providers));
    await writeDomains(ctx, page, kind, domains);
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
