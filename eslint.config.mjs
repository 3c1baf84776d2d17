// Type-aware lint: typescript-eslint's recommended rules with type information, for every TypeScript file.
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import path from 'node:path';

/**
 * The layering docs/design.md describes, as lint: each zone of the tree names the zones it may import from (besides
 * itself and packages), so an arrow back up or sideways between domains fails `npm test`. A file belongs to the zone
 * with the longest matching path; folders of no zone (cli, dev, bench, scripts, test, examples) are entry points and
 * tools, free to import anything. Imports are resolved to files, so the rule holds at any depth.
 */
const PLATFORM = [
  'platform/security',
  'platform/config',
  'platform/net',
  'platform/observability',
  'platform/email',
  'platform/store',
  'platform/temporal',
  'platform/http',
];
/** Each platform folder may import the ones below it. */
const platformBelow = (folder) => PLATFORM.slice(0, PLATFORM.indexOf(folder));
const DOMAINS = ['provisioning', 'migration', 'sign-in', 'scim'];
const ZONES = {
  ...Object.fromEntries(PLATFORM.map((f) => [f, platformBelow(f)])),
  // The workflow-safe TCC core imports only the store's types; workflows import it, the search attributes and their
  // activities' and the store's types (the workflow bundle holds no other code of the project).
  'provisioning/tcc.ts': ['platform/store'],
  'provisioning/workflows': [
    'provisioning/tcc.ts',
    'provisioning/activities',
    'platform/temporal/search-attributes.ts',
    'platform/store',
  ],
  'migration/workflows': ['migration/activities', 'platform/store'],
  provisioning: PLATFORM,
  migration: PLATFORM,
  // Sign-in and SCIM create users through provisioning's creation service.
  'sign-in': ['provisioning', ...PLATFORM],
  scim: ['provisioning', ...PLATFORM],
  // The composition root builds every domain; the API and the worker are built from it.
  composition: [...DOMAINS, ...PLATFORM],
  api: ['composition', ...DOMAINS, ...PLATFORM],
  workers: ['composition', ...DOMAINS, ...PLATFORM],
};
const zoneOf = (file) =>
  Object.keys(ZONES)
    .filter((z) => file === z || file.startsWith(`${z}/`))
    .sort((a, b) => b.length - a.length)[0];
const allowedFrom = (zone, target) =>
  ZONES[zone].some((z) => [target, `${target}.ts`].some((t) => t === z || t.startsWith(`${z}/`)));

const layers = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const from = path
      .relative(import.meta.dirname, context.filename)
      .split(path.sep)
      .join('/');
    const zone = zoneOf(from);
    if (!zone) return {};
    const check = (node, spec) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
      const targetZone = zoneOf(target) ?? zoneOf(`${target}.ts`);
      // A domain reaches into its own nested zones (provisioning starts its workflows); they do not reach back up.
      if (!targetZone || targetZone === zone || targetZone.startsWith(`${zone}/`) || allowedFrom(zone, target)) return;
      context.report({
        node,
        message: `${zone} may not import ${target} (zone ${targetZone}): it may import only ${ZONES[zone].join(', ') || 'no other zone'} (the layers of docs/design.md)`,
      });
    };
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source, node.source.value),
    };
  },
};

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
  {
    files: ['**/*.ts'],
    plugins: { project: { rules: { layers } } },
    rules: { 'project/layers': 'error' },
  },
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
