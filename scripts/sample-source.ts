import { Client } from 'pg';
import { generateSource } from '../test/fixtures/source/generate';

/**
 * `npm run sample-source -- [--users N] [--admin-url postgres://…]`: a small IdentityServer source to rehearse a
 * migration on, in a database `identity_sample_source` (made again at each call) on the PostgreSQL at --admin-url;
 * by default the one `npm start` runs embedded. The test fixture's generator: users with claims of every kind,
 * hashes in every format, duplicate e-mails, clients, providers whose SSO domains clash, refresh tokens.
 */
const DATABASE = 'identity_sample_source';

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 && process.argv[at + 1] ? process.argv[at + 1] : fallback;
}

async function main(): Promise<void> {
  const port = process.env.Embedded__PostgresPort ?? '54329';
  const adminUrl = option('admin-url', `postgres://postgres:postgres@127.0.0.1:${port}/postgres`);
  const users = Number(option('users', '1000'));
  if (!Number.isInteger(users) || users < 1) throw new Error('--users takes a whole number of users, 1 or more');
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect().catch((error: Error) => {
    throw new Error(
      `cannot reach PostgreSQL at ${new URL(adminUrl).host} (${error.message}); is \`npm start\` running?`,
    );
  });
  try {
    await admin.query(`drop database if exists ${DATABASE} with (force)`);
    await admin.query(`create database ${DATABASE}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${DATABASE}`;
  await generateSource(url.toString(), { users });
  console.log(`sample source: ${users} users in ${DATABASE} on ${url.host}`);
  console.log(`next: npm run migrate -- --Source:ConnectionString ${url.toString()} --DryRun true`);
}

main().catch((error: unknown) => {
  console.error(`sample-source: ${(error as Error).message}`);
  process.exit(1);
});
