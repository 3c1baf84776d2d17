// Type-aware lint: typescript-eslint's recommended rules with type information, for every TypeScript file.
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layering docs/design.md describes, as lint: a folder imports only the folders below it, so an arrow back up
 * fails `npm test`. The platform (security, config, observability, store) and the workflow-safe code (the TCC core,
 * the workflows) are held to it; the domains above them are next (see docs/development.md).
 */
const FOLDERS = [
  'activities',
  'api',
  'bench',
  'cli',
  'client',
  'composition',
  'config',
  'dev',
  'federation',
  'migration-source',
  'observability',
  'oidc',
  'provisioning',
  'scripts',
  'security',
  'store',
  'workers',
  'workflows',
];
/** `files` may import from `allowed` (and from itself) among the project's folders, and from packages. */
const layer = (folder, allowed, except = []) => ({
  files: [`${folder}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: [
              ...FOLDERS.filter((f) => f !== folder && !allowed.includes(f)).flatMap((f) =>
                // A folder with an excepted file is matched by its files only: a pattern naming the folder itself
                // would exclude it whole, and gitignore-style patterns cannot re-include a file of it.
                except.some((e) => e.includes(`/${f}/`))
                  ? [`../${f}/*`]
                  : [`../${f}`, `../${f}/*`, `../../${f}`, `../../${f}/*`, `../../../${f}/*`],
              ),
              ...except.map((e) => `!${e}`),
            ],
            message: `${folder}/ may import only from ${allowed.join(', ') || 'no other folder of the project'} (the layers of docs/design.md)`,
          },
        ],
      },
    ],
  },
});

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.build-test/', '.tools/', '.data/', 'coverage/', '**/*.js', '**/*.mjs'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    // Express tells an error handler by its four parameters, so an unused `_next` must stay; a rest pattern names
    // what it leaves out with `_`.
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  layer('security', []),
  layer('config', ['security']),
  // Binding a port (composition/listen.ts) is shared plumbing the metrics server uses too.
  layer('observability', ['config', 'security'], ['../composition/listen']),
  layer('store', ['observability', 'config', 'security']),
  layer('provisioning', ['store']),
  layer('workflows', ['provisioning', 'activities', 'store']),
  {
    // Tests read JSON answers (`res.body`) whose shape is what they assert: member access on them is the point.
    files: ['test/**/*.ts', 'scripts/record-histories.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/require-await': 'off',
    },
  },
);
