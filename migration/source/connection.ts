import { Kysely, MssqlDialect, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { survivesLostConnections } from '../../platform/store/database';
import * as tarn from 'tarn';
import * as tedious from 'tedious';
import { MSSQL_SCHEMA, parse as parseConnectionString } from '@tediousjs/connection-string';
import type { SourceDatabase } from './source-schema';

export type SourceKind = 'sqlserver' | 'postgres';

/** What tedious connects with: the server, how it authenticates, and its options. */
export type SqlServerConfig = Pick<tedious.ConnectionConfiguration, 'server' | 'authentication'> & {
  options: NonNullable<tedious.ConnectionConfiguration['options']>;
};

export interface ParsedConnection {
  kind: SourceKind;
  /** For PostgreSQL: a URL `pg` understands. */
  url?: string;
  /** For SQL Server: tedious's connection configuration. */
  sqlServer?: SqlServerConfig;
}

export class ConnectionStringError extends Error {}

/**
 * Migration pages a worker runs at once, and so the source connections it needs: the roles, logins and MFA passes
 * run side by side, each in Migration:Parallelism partitions (2 by default), beside the small passes.
 */
export const MIGRATION_PAGES_AT_ONCE = 16;

/** ADO.NET keywords the service cannot honour: each is refused by name rather than silently ignored. */
const UNSUPPORTED: Record<string, string> = {
  'integrated security':
    'Windows authentication is not available here; use a SQL login or Authentication=Active Directory …',
  trusted_connection:
    'Windows authentication is not available here; use a SQL login or Authentication=Active Directory …',
  attachdbfilename: 'attach the database to the server and name it with Initial Catalog',
  'column encryption setting': 'Always Encrypted columns cannot be read by the migration',
};

/** ADO.NET's Authentication values and the tedious authentication each becomes. */
function authenticationOf(
  mode: string | undefined,
  user: string,
  password: string,
  raw: ReadonlyMap<string, string>,
): SqlServerConfig['authentication'] {
  switch ((mode ?? 'sql password').toLowerCase().replace(/\s+/g, ' ').trim()) {
    case 'sql password':
      return { type: 'default', options: { userName: user, password } };
    case 'active directory default':
      return { type: 'azure-active-directory-default', options: user ? { clientId: user } : {} };
    case 'active directory managed identity':
    case 'active directory msi':
      return { type: 'azure-active-directory-msi-vm', options: user ? { clientId: user } : {} };
    case 'active directory service principal': {
      const tenantId = raw.get('tenant id');
      if (!tenantId)
        throw new ConnectionStringError(
          'Authentication=Active Directory Service Principal also needs Tenant Id=<directory (tenant) id>; User ID is the application id and Password its secret',
        );
      return {
        type: 'azure-active-directory-service-principal-secret',
        options: { clientId: user, clientSecret: password, tenantId },
      };
    }
    default:
      throw new ConnectionStringError(
        `Authentication=${mode} is not supported; use Sql Password, Active Directory Default, Active Directory Managed Identity or Active Directory Service Principal`,
      );
  }
}

/**
 * ADO.NET's SQL Server form as operators copy it from an IdentityServer's appsettings, parsed by tedious's own parser
 * (quoted values, `{…}`, keyword synonyms): `Server=tcp:host,1433`, named instances (`host\INSTANCE`), Encrypt
 * (true, false, strict) and TrustServerCertificate, and the Azure SQL authentication modes tedious supports.
 */
/** What MSSQL_SCHEMA makes of a string: canonical keywords, values coerced to their types. */
type SchemaValues = Record<string, string | number | boolean | undefined>;

function sqlServerConfig(raw: ReadonlyMap<string, string>, schema: SchemaValues): SqlServerConfig {
  for (const [keyword, why] of Object.entries(UNSUPPORTED))
    if (raw.has(keyword) && !/^(false|no)$/i.test(raw.get(keyword)!))
      throw new ConnectionStringError(`the keyword ${keyword} is not supported: ${why}`);
  const source = String(schema['data source']).replace(/^tcp:/i, '').trim();
  if (/^(np|lpc|admin):/i.test(source))
    throw new ConnectionStringError('only TCP connections are supported: use Server=tcp:host,port or Server=host');
  const [address, port] = source.split(',').map((part) => part.trim());
  const [host, instanceName] = address.split('\\');
  const server = host === '.' || /^\(local\)$/i.test(host) ? 'localhost' : host;
  const text = (key: string) => (schema[key] === undefined ? '' : String(schema[key]));
  const encrypt = /^strict$/i.test(raw.get('encrypt') ?? '') ? 'strict' : schema.encrypt !== false;
  return {
    server,
    authentication: authenticationOf(raw.get('authentication'), text('user id'), text('password'), raw),
    options: {
      // A named instance is found through the SQL Browser service; its port is not fixed.
      ...(instanceName ? { instanceName } : { port: Number(port ?? 1433) }),
      database: text('initial catalog'),
      encrypt,
      trustServerCertificate: schema.trustservercertificate === true,
      ...(schema['connection timeout'] !== undefined && {
        connectTimeout: Number(schema['connection timeout']) * 1000,
      }),
      ...(schema['application name'] !== undefined && { appName: text('application name') }),
      ...(schema.applicationintent === 'ReadOnly' && { readOnlyIntent: true }),
      ...(schema.multisubnetfailover === true && { multiSubnetFailover: true }),
    },
  };
}

/**
 * Tells the source kind from the connection string's form: a postgres:// URL or Npgsql's `Host=` form is PostgreSQL;
 * ADO.NET's `Server=`/`Data Source=` form is SQL Server. Errors never repeat the string (it holds a password).
 */
export function parseSourceConnectionString(value: string): ParsedConnection {
  const trimmed = value.trim();
  if (/^postgres(ql)?:\/\//i.test(trimmed)) return { kind: 'postgres', url: trimmed };
  let parsed;
  try {
    parsed = parseConnectionString(trimmed);
  } catch {
    throw new ConnectionStringError('Source:ConnectionString is not a valid Key=Value;… connection string');
  }
  const raw: ReadonlyMap<string, string> = parsed;
  const first = (...keys: string[]) => keys.map((k) => raw.get(k)).find((v) => v !== undefined);
  if (raw.has('host')) {
    const url = new URL('postgres://localhost');
    url.hostname = raw.get('host')!;
    if (raw.get('port')) url.port = raw.get('port')!;
    url.pathname = `/${first('database') ?? ''}`;
    url.username = first('username', 'user id', 'userid', 'user') ?? '';
    url.password = first('password') ?? '';
    return { kind: 'postgres', url: url.toString() };
  }
  const schema = parsed.toSchema(MSSQL_SCHEMA) as SchemaValues;
  if (schema['data source']) return { kind: 'sqlserver', sqlServer: sqlServerConfig(raw, schema) };
  throw new ConnectionStringError(
    'Source:ConnectionString is neither a postgres:// URL, an Npgsql string (Host=…) nor a SQL Server string (Server=…)',
  );
}

/**
 * One kysely instance for either source: every source query is written once against SourceDatabase. The pool
 * serves every migration page a worker runs at once (MIGRATION_PAGES_AT_ONCE). `timeoutMs` (the read-through
 * window's) bounds each query on the server and the wait for a connection, so a slow source fails a look-up
 * instead of holding the request; the migration's pages run without it.
 */
export function connectSource(
  connectionString: string,
  poolSize = MIGRATION_PAGES_AT_ONCE,
  timeoutMs?: number,
): { db: Kysely<SourceDatabase>; kind: SourceKind } {
  const parsed = parseSourceConnectionString(connectionString);
  if (parsed.kind === 'postgres') {
    const bounded = timeoutMs === undefined ? {} : pgTimeouts(timeoutMs);
    const pool = survivesLostConnections(
      new Pool({ connectionString: parsed.url, max: poolSize, ...bounded }),
      'source',
    );
    return { kind: 'postgres', db: new Kysely<SourceDatabase>({ dialect: new PostgresDialect({ pool }) }) };
  }
  const config = parsed.sqlServer!;
  const bounded = timeoutMs === undefined ? {} : { requestTimeout: timeoutMs };
  return {
    kind: 'sqlserver',
    db: new Kysely<SourceDatabase>({
      dialect: new MssqlDialect({
        tarn: {
          ...tarn,
          options: { min: 0, max: poolSize, ...(timeoutMs === undefined ? {} : { acquireTimeoutMillis: timeoutMs }) },
        },
        tedious: {
          ...tedious,
          connectionFactory: () =>
            new tedious.Connection({
              ...config,
              options: { ...config.options, ...bounded, rowCollectionOnRequestCompletion: false },
            }),
        },
      }),
    }),
  };
}

/** The server ends a statement past the timeout; the client gives up on the reply, or on a connection, a bit later. */
const pgTimeouts = (timeoutMs: number) => ({
  statement_timeout: Math.ceil(timeoutMs),
  query_timeout: Math.ceil(timeoutMs) + 500,
  connectionTimeoutMillis: Math.ceil(timeoutMs),
});
