import { join } from 'node:path';
import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';

// The rule itself, without the type-aware set-up around it in eslint.config.mjs, so probes need not exist on disk.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { layers, queriesOutOfPlace } = require('../../lint/layers.cjs') as {
  layers: unknown;
  queriesOutOfPlace: unknown[];
};

const ROOT = join(__dirname, '..', '..');
const linter = new Linter({ configType: 'flat' });
const config = [
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { project: { rules: { layers } } },
    rules: { 'project/layers': 'error' },
  },
  // As eslint.config.mjs scopes it: queries only in store modules and the source reader.
  {
    files: ['**/*.ts'],
    ignores: ['**/store/**', 'migration/source/**', 'test/**'],
    rules: { 'no-restricted-syntax': ['error', ...queriesOutOfPlace] },
  },
] as unknown as Linter.Config[];

/** The layer rule's messages for `code` as if it were the file at `file` (relative to the repository). */
function refusals(file: string, code: string): string[] {
  return linter.verify(code, config, { filename: join(ROOT, file) }).map((m) => m.message);
}

describe('the import layers, as lint', () => {
  it.each([
    [
      'a platform folder imports a tool folder no zone names',
      'platform/security/probe.ts',
      `import { freePort } from '../../dev/ports';`,
    ],
    [
      'a platform folder imports a new top-level folder',
      'platform/store/probe.ts',
      `import { x } from '../../shared/thing';`,
    ],
    [
      'the platform reaches a domain through a tool folder',
      'platform/http/probe.ts',
      `export * from '../../cli/start';`,
    ],
    [
      'sign-in imports provisioning’s workflow internals',
      'sign-in/oidc/probe.ts',
      `import { runTransaction } from '../../provisioning/workflows/transaction';`,
    ],
    [
      'SCIM imports provisioning’s activities',
      'scim/probe.ts',
      `import { createProvisioningActivities } from '../provisioning/activities';`,
    ],
    [
      'activities import the services above them',
      'provisioning/activities/probe.ts',
      `import { newUserFrom } from '../creation';`,
    ],
    ['workflows import the API handlers', 'provisioning/workflows/probe.ts', `import { x } from '../api/profile';`],
    [
      'the source reader imports the passes above it',
      'migration/source/probe.ts',
      `import { x } from '../activities/passes/users';`,
    ],
    [
      'a migration workflow imports the runner',
      'migration/workflows/probe.ts',
      `import { x } from '../runner/control';`,
    ],
    ['sign-in’s pages import its admin handlers', 'sign-in/oidc/probe.ts', `import { x } from '../api/clients';`],
    ['import = require', 'platform/security/probe.ts', `import dev = require('../../dev/ports');`],
    ['a template-literal import()', 'platform/http/probe.ts', 'export const load = () => import(`../../scim/users`);'],
    [
      'an import() whose path is built at run time',
      'platform/http/probe.ts',
      'export const load = (d: string) => import(`../../${d}/users`);',
    ],
    ['a require() call', 'platform/http/probe.ts', `export const m = require('../../sign-in/oidc/provider');`],
    [
      'an import type in a type position',
      'platform/store/probe.ts',
      `export type T = import('../../migration/read-through').ReadThrough;`,
    ],
    ['a domain imports another sideways', 'migration/probe.ts', `import { x } from '../sign-in/read-through';`],
    [
      'provisioning’s removals import sign-in’s back-channel logout',
      'provisioning/workflows/probe.ts',
      `import { notifySignOut } from '../../sign-in/workflows/notify-sign-out';`,
    ],
    [
      'sign-in’s workflow imports the services above it',
      'sign-in/workflows/probe.ts',
      `import { createSignOut } from '../sign-out-notices';`,
    ],
    [
      'sign-in’s delivery activities import its workflow',
      'sign-in/activities/probe.ts',
      `import { notifySignOut } from '../workflows/notify-sign-out';`,
    ],
    ['the platform imports a domain', 'platform/store/probe.ts', `import { x } from '../../scim/user-endpoints';`],
  ])('refuses: %s', (_what, file, code) => {
    expect(refusals(file, code)).toHaveLength(1);
  });

  it.each([
    ['a handler builds a query', 'scim/probe.ts', `export const q = (db: any) => db.selectFrom('users').selectAll();`],
    [
      'a page writes a row',
      'sign-in/oidc/probe.ts',
      `export const q = (ctx: any) => ctx.db.insertInto('audit_events');`,
    ],
    ['raw SQL in a domain', 'provisioning/probe.ts', "import { sql } from 'kysely';\nexport const q = sql`select 1`;"],
    ['sql.raw in the API', 'api/probe.ts', "import { sql } from 'kysely';\nexport const q = sql.raw('select 1');"],
  ])('refuses a query out of place: %s', (_what, file, code) => {
    expect(refusals(file, code)).toHaveLength(1);
  });

  it.each([
    ['a store module', 'platform/store/probe.ts', `export const q = (db: any) => db.selectFrom('users').selectAll();`],
    ['a domain’s own store', 'sign-in/store/probe.ts', `export const q = (db: any) => db.deleteFrom('audit_events');`],
    [
      'the source reader',
      'migration/source/probe.ts',
      "import { sql } from 'kysely';\nexport const q = sql`select 1`;",
    ],
  ])('allows a query in %s', (_what, file, code) => {
    expect(refusals(file, code)).toEqual([]);
  });

  it.each([
    [
      'sign-in creates users through the public face',
      'sign-in/api/probe.ts',
      `import { newUserFrom } from '../../provisioning/creation';`,
    ],
    ['a platform folder imports one below it', 'platform/http/probe.ts', `import { x } from '../store/users';`],
    ['workflows import the TCC core', 'provisioning/workflows/probe.ts', `import { reasons } from '../tcc';`],
    [
      'provisioning’s removals name the sign-out workflow',
      'provisioning/workflows/probe.ts',
      `import { NOTIFY_SIGN_OUT } from '../../platform/temporal/sign-out-workflow';`,
    ],
    [
      'sign-in’s pages tell sign-outs through its own notices',
      'sign-in/oidc/probe.ts',
      `import { createSignOut } from '../sign-out-notices';`,
    ],
    ['the API imports a domain’s inside', 'api/probe.ts', `import { x } from '../provisioning/api/profile';`],
    ['a tool imports anything', 'cli/probe.ts', `import { x } from '../provisioning/workflows/transaction';`],
    ['a package', 'platform/store/probe.ts', `import { Kysely } from 'kysely';`],
  ])('allows: %s', (_what, file, code) => {
    expect(refusals(file, code)).toEqual([]);
  });
});
