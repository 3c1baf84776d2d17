import { Kysely, MssqlDialect, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { survivesLostConnections } from '../store/database';
import * as tarn from 'tarn';
import * as tedious from 'tedious';
import type { SourceDatabase } from './schema';

export type SourceKind = 'sqlserver' | 'postgres';

export interface ParsedConnection {
  kind: SourceKind;
  /** For PostgreSQL: a URL `pg` understands. */
  url?: string;
  /** For SQL Server: tedious's connection settings. */
  sqlServer?: {
    server: string;
    port: number;
    database: string;
    user: string;
    password: string;
    encrypt: boolean;
    trustServerCertificate: boolean;
  };
}

export class ConnectionStringError extends Error {}

/**
 * Migration pages a worker runs at once, and so the source connections it needs: the roles, logins and MFA passes
 * run side by side, each in Migration:Parallelism partitions (2 by default), beside the small passes.
 */
export const MIGRATION_PAGES_AT_ONCE = 16;

/** ADO.NET / Npgsql `Key=Value;` pairs, keys case-insensitive. */
function pairs(value: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const part of value.split(';')) {
    const index = part.indexOf('=');
    if (index <= 0) continue;
    map.set(part.slice(0, index).trim().toLowerCase().replace(/\s+/g, ' '), part.slice(index + 1).trim());
  }
  return map;
}

const first = (map: Map<string, string>, ...keys: string[]) => keys.map((k) => map.get(k)).find((v) => v !== undefined);
const truthy = (v: string | undefined) => v !== undefined && /^(true|yes|1|mandatory|strict)$/i.test(v);

/**
 * Tells the source kind from the connection string's form: a postgres:// URL or Npgsql's `Host=` form is PostgreSQL;
 * ADO.NET's `Server=`/`Data Source=` form is SQL Server. Errors never repeat the string (it holds a password).
 */
export function parseSourceConnectionString(value: string): ParsedConnection {
  const trimmed = value.trim();
  if (/^postgres(ql)?:\/\//i.test(trimmed)) return { kind: 'postgres', url: trimmed };
  const map = pairs(trimmed);
  if (map.has('host')) {
    const url = new URL('postgres://localhost');
    url.hostname = map.get('host')!;
    if (map.get('port')) url.port = map.get('port')!;
    url.pathname = `/${first(map, 'database') ?? ''}`;
    url.username = first(map, 'username', 'user id', 'userid', 'user') ?? '';
    url.password = first(map, 'password') ?? '';
    return { kind: 'postgres', url: url.toString() };
  }
  const server = first(map, 'server', 'data source', 'address', 'addr');
  if (server) {
    const [host, port] = server.replace(/^tcp:/i, '').split(',');
    return {
      kind: 'sqlserver',
      sqlServer: {
        server: host.trim(),
        port: Number(port ?? 1433),
        database: first(map, 'database', 'initial catalog') ?? '',
        user: first(map, 'user id', 'uid', 'user') ?? '',
        password: first(map, 'password', 'pwd') ?? '',
        encrypt: map.has('encrypt') ? truthy(map.get('encrypt')) : true,
        trustServerCertificate: truthy(map.get('trustservercertificate')),
      },
    };
  }
  throw new ConnectionStringError(
    'Source:ConnectionString is neither a postgres:// URL, an Npgsql string (Host=…) nor a SQL Server string (Server=…)',
  );
}

/**
 * One kysely instance for either source: every source query is written once against SourceDatabase. The pool
 * serves every migration page a worker runs at once (MIGRATION_PAGES_AT_ONCE).
 */
export function connectSource(
  connectionString: string,
  poolSize = MIGRATION_PAGES_AT_ONCE,
): { db: Kysely<SourceDatabase>; kind: SourceKind } {
  const parsed = parseSourceConnectionString(connectionString);
  if (parsed.kind === 'postgres') {
    const pool = survivesLostConnections(new Pool({ connectionString: parsed.url, max: poolSize }), 'source');
    return { kind: 'postgres', db: new Kysely<SourceDatabase>({ dialect: new PostgresDialect({ pool }) }) };
  }
  const s = parsed.sqlServer!;
  return {
    kind: 'sqlserver',
    db: new Kysely<SourceDatabase>({
      dialect: new MssqlDialect({
        tarn: { ...tarn, options: { min: 0, max: poolSize } },
        tedious: {
          ...tedious,
          connectionFactory: () =>
            new tedious.Connection({
              server: s.server,
              authentication: { type: 'default', options: { userName: s.user, password: s.password } },
              options: {
                port: s.port,
                database: s.database,
                encrypt: s.encrypt,
                trustServerCertificate: s.trustServerCertificate,
                rowCollectionOnRequestCompletion: false,
              },
            }),
        },
      }),
    }),
  };
}
