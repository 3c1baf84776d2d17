import { sql, type Kysely, type Selectable } from 'kysely';
import type { SourceDatabase } from '../../../migration-source/schema';
import { protectText } from '../../../security/data-protection';
import { insertSkippingExisting } from '../../../store/insert-new';
import { countWrites, keysetPage, pageById, type Pass, type PassContext, type PageResult } from '../types';

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
  const written = await ctx.target
    .insertInto('sso_domains')
    .values(rows)
    .onConflict((oc) => oc.column('domain').doNothing())
    .returning('domain')
    .execute();
  const mine = new Set(written.map((w) => w.domain));
  const others = rows.filter((r) => !mine.has(r.domain));
  if (others.length > 0) {
    const existing = await ctx.target
      .selectFrom('sso_domains')
      .selectAll()
      .where(
        'domain',
        'in',
        others.map((o) => o.domain),
      )
      .execute();
    for (const row of others) {
      const holder = existing.find((e) => e.domain === row.domain);
      if (holder && (holder.provider_kind !== kind || holder.provider_id !== row.provider_id)) {
        page.warnings.push(
          `SSO domain ${row.domain} of ${kind} provider ${row.provider_id} already belongs to ${holder.provider_kind} provider ${holder.provider_id}`,
        );
      }
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
  insertSkippingExisting(
    ctx.target.insertInto('saml_providers').values(
      providers.map((p) => ({
        ...providerColumns(p),
        entity_id: p.EntityId,
        sso_url: p.SingleSignOnUrl,
        signing_certificate: p.SigningCertificate,
      })),
    ),
  ),
);

export const oidcProvidersPass = providersPass('oidc', 'OidcProviderConfigurations', (ctx, providers) =>
  insertSkippingExisting(
    ctx.target.insertInto('oidc_providers').values(
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
  ),
);

/** Whether the source table has the column: INFORMATION_SCHEMA, the same on SQL Server and PostgreSQL. */
async function hasColumn(source: Kysely<SourceDatabase>, table: string, column: string): Promise<boolean> {
  const found = await sql<{
    n: number;
  }>`select count(*) as n from INFORMATION_SCHEMA.COLUMNS where TABLE_NAME = ${table} and COLUMN_NAME = ${column}`.execute(
    source,
  );
  return Number(found.rows[0]?.n ?? 0) > 0;
}

/**
 * Refresh tokens only from a source fork that keeps grant keys verbatim: a stock source stores a hash of each
 * handle, which can never be redeemed again, so those are counted and skipped with a warning.
 */
export const refreshTokensPass: Pass = async (ctx, cursor) => {
  const { source, target, options } = ctx;
  const now = new Date();
  // Before Duende IdentityServer 6.1 the table had no Id: Key was its primary key, and pages follow it instead.
  const keyColumn = (await hasColumn(source, 'PersistedGrants', 'Id')) ? 'Id' : 'Key';
  const { rows: grants, page } = await keysetPage(
    cursor,
    options.pageSize,
    (after) =>
      source
        .selectFrom('PersistedGrants')
        .select([
          'Key',
          'Type',
          'SubjectId',
          'SessionId',
          'ClientId',
          'Description',
          'CreationTime',
          'Expiration',
          'ConsumedTime',
          'Data',
        ])
        .$if(keyColumn === 'Id', (q) => q.select('Id'))
        .where('Type', '=', 'refresh_token')
        .where('ConsumedTime', 'is', null)
        .where((eb) => eb.or([eb('Expiration', 'is', null), eb('Expiration', '>', now)]))
        .$if(after !== undefined, (q) => q.where(keyColumn, '>', after as string))
        .orderBy(keyColumn)
        .offset(0)
        .fetch(options.pageSize)
        .execute(),
    (g) => (keyColumn === 'Id' ? g.Id : g.Key),
  );
  if (!(options.migrateRefreshTokens && options.sourceGrantKeysAreUnhashed)) {
    page.skipped = grants.length;
    if (!cursor) {
      page.warnings.push(
        options.migrateRefreshTokens
          ? 'MigrateRefreshTokens is set but SourceGrantKeysAreUnhashed is not: a stock source keeps only hashes of refresh-token handles, so refresh tokens were skipped and users log in again'
          : 'refresh tokens were not migrated (MigrateRefreshTokens is false); users log in again',
      );
    }
    return page;
  }
  if (grants.length === 0 || options.dryRun) return page;
  const rows = grants
    .filter((g) => g.Key)
    .map((g) => ({
      key: g.Key!,
      type: g.Type,
      subject_id: g.SubjectId,
      session_id: g.SessionId,
      client_id: g.ClientId,
      description: g.Description,
      creation_time: g.CreationTime,
      expiration: g.Expiration,
      consumed_time: g.ConsumedTime,
      data: g.Data,
    }));
  const written = rows.length
    ? await target
        .insertInto('grants')
        .values(rows)
        .onConflict((oc) => oc.column('key').doNothing())
        .returning('key')
        .execute()
    : [];
  countWrites(page, grants.length, written.length);
  return page;
};
