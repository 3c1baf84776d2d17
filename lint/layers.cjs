// The import-layers rule of eslint.config.mjs, a CommonJS module so that a unit test can run it over probe files
// (test/unit/layers-lint.test.ts) without the type-aware set-up around it.
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');

/**
 * The layering docs/design.md describes, as lint: each zone of the tree names the zones it may import from (besides
 * itself and packages), so an arrow back up, sideways between domains or up inside a domain fails `npm test`. A file
 * belongs to the zone with the longest matching path. Folders of no zone (cli, dev, bench, scripts, test, examples)
 * are entry points and tools: they may import anything, and nothing zoned may import them (nor a new folder no zone
 * names: default deny). Imports are resolved to files, so the rule holds at any depth, in every import form.
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
/**
 * Back-channel logout's workflow as a type name and an input: sign-in runs it, provisioning's removals start it. Workflow
 * code only, like the search attributes.
 */
const SIGN_OUT_WORKFLOW = 'platform/temporal/sign-out-workflow.ts';
/** Each platform folder may import the ones below it. */
const platformBelow = (folder) => PLATFORM.slice(0, PLATFORM.indexOf(folder));
const DOMAINS = ['provisioning', 'migration', 'sign-in', 'scim'];
/**
 * Provisioning's public face: the only modules other domains may import (users are created, workflows run and
 * outcomes answered through them); its workflows' and activities' insides stay its own.
 */
const PROVISIONING_FACE = [
  'provisioning/creation.ts',
  'provisioning/outcome-answers.ts',
  'provisioning/workflow-runner.ts',
  'provisioning/workflows/ids.ts',
  'provisioning/workflows/provisioning.ts',
  'provisioning/apps/app-providers.ts',
];
const ZONES = {
  ...Object.fromEntries(PLATFORM.map((f) => [f, platformBelow(f)])),
  // Inside provisioning, from the top: api → services (the domain's own folder) → workflows → activities → the
  // adapters to the apps (the TCC HTTP client, the app providers) → the workflow-safe TCC core, which imports only the
  // store's types. Workflows import the core, the search attributes
  // and their activities' and the store's types (the workflow bundle holds no other code of the project).
  'provisioning/store': PLATFORM,
  'provisioning/tcc.ts': ['provisioning/store', 'platform/store'],
  'provisioning/apps': ['provisioning/tcc.ts', 'provisioning/store', ...PLATFORM],
  'provisioning/activities': ['provisioning/apps', 'provisioning/tcc.ts', 'provisioning/store', ...PLATFORM],
  'provisioning/workflows': [
    'provisioning/tcc.ts',
    'provisioning/activities',
    'platform/temporal/search-attributes.ts',
    SIGN_OUT_WORKFLOW,
    'provisioning/store',
    'platform/store',
  ],
  provisioning: [
    'provisioning/workflows',
    'provisioning/activities',
    'provisioning/apps',
    'provisioning/tcc.ts',
    'provisioning/store',
    ...PLATFORM,
  ],
  'provisioning/api': [
    'provisioning',
    'provisioning/workflows',
    'provisioning/activities',
    'provisioning/apps',
    'provisioning/tcc.ts',
    'provisioning/store',
    ...PLATFORM,
  ],
  // Inside migration: runner and api → workflows → activities → the source reader.
  'migration/store': PLATFORM,
  'migration/source': PLATFORM,
  'migration/activities': ['migration/source', 'migration/store', ...PLATFORM],
  'migration/workflows': ['migration/activities', 'migration/store', 'platform/store'],
  migration: ['migration/activities', 'migration/source', 'migration/store', ...PLATFORM],
  'migration/runner': ['migration/workflows', 'migration/activities', 'migration/store', ...PLATFORM],
  'migration/api': ['migration', 'migration/runner', 'migration/store', ...PLATFORM],
  // Sign-in and SCIM create users through provisioning's public face. Inside sign-in, the admin handlers (api) sit
  // over the provider, its pages, federation and the sign-out notices (the domain's own folder), which start the
  // back-channel logout workflow (workflows) → its delivery (activities); the workflow imports only its activities'
  // types, the store's and the workflow-safe platform modules, as provisioning's do.
  'sign-in/store': PLATFORM,
  'sign-in/activities': ['sign-in/store', ...PLATFORM],
  'sign-in/workflows': [
    'sign-in/activities',
    'platform/temporal/search-attributes.ts',
    SIGN_OUT_WORKFLOW,
    'sign-in/store',
    'platform/store',
  ],
  'sign-in': ['sign-in/workflows', 'sign-in/activities', 'sign-in/store', ...PROVISIONING_FACE, ...PLATFORM],
  'sign-in/api': [
    'sign-in',
    'sign-in/workflows',
    'sign-in/activities',
    'sign-in/store',
    ...PROVISIONING_FACE,
    ...PLATFORM,
  ],
  'scim/store': PLATFORM,
  scim: ['scim/store', ...PROVISIONING_FACE, ...PLATFORM],
  // The composition root builds every domain; the API and the worker are built from it.
  composition: [...DOMAINS, ...PLATFORM],
  api: ['composition', ...DOMAINS, ...PLATFORM],
  workers: ['composition', ...DOMAINS, ...PLATFORM],
};
const zoneOf = (file) =>
  Object.keys(ZONES)
    .filter((z) => file === z || file.startsWith(`${z}/`))
    .sort((a, b) => b.length - a.length)[0];
/**
 * A zone's list names zones (a folder: every file whose zone it is) or single files (`….ts`). The composition, api
 * and workers zones name whole domains, so for them a domain covers every zone inside it.
 */
const WHOLE_DOMAINS = new Set(['composition', 'api', 'workers']);
const allowedFrom = (zone, target, targetZone) =>
  ZONES[zone].some((z) =>
    z.endsWith('.ts')
      ? target === z || `${target}.ts` === z
      : z === targetZone || (WHOLE_DOMAINS.has(zone) && targetZone.startsWith(`${z}/`)),
  );

const layers = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const from = path.relative(ROOT, context.filename).split(path.sep).join('/');
    const zone = zoneOf(from);
    if (!zone) return {};
    const check = (node, spec) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
      const targetZone = zoneOf(target) ?? zoneOf(`${target}.ts`);
      if (!targetZone) {
        context.report({
          node,
          message: `${zone} may not import ${target}: it is in no zone (entry points and tools import the layers, never the other way); a new folder needs a line in ZONES (the layers of docs/design.md)`,
        });
        return;
      }
      if (targetZone === zone || allowedFrom(zone, target, targetZone)) return;
      context.report({
        node,
        message: `${zone} may not import ${target} (zone ${targetZone}): it may import only ${ZONES[zone].join(', ') || 'no other zone'} (the layers of docs/design.md)`,
      });
    };
    // A module path the rule cannot read (a template with a hole, a computed require) could name any file: refused.
    const checkExpression = (node, source) => {
      if (source.type === 'Literal') return check(source, source.value);
      if (source.type === 'TemplateLiteral' && source.expressions.length === 0)
        return check(source, source.quasis[0].value.cooked);
      context.report({
        node: source,
        message: `${zone}: a module path built at run time cannot be checked against the layers`,
      });
    };
    const isRequire = (callee) =>
      (callee.type === 'Identifier' && callee.name === 'require') ||
      (callee.type === 'MemberExpression' &&
        callee.object.type === 'Identifier' &&
        callee.object.name === 'require' &&
        callee.property.type === 'Identifier' &&
        callee.property.name === 'resolve');
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => checkExpression(node, node.source),
      // `import x = require('…')`
      TSImportEqualsDeclaration: (node) =>
        node.moduleReference.type === 'TSExternalModuleReference' &&
        checkExpression(node, node.moduleReference.expression),
      // `import('…')` in a type position
      TSImportType: (node) => {
        const argument = node.source ?? node.argument;
        const literal = argument?.literal ?? argument;
        if (literal?.type === 'Literal') check(literal, literal.value);
      },
      CallExpression: (node) => isRequire(node.callee) && node.arguments[0] && checkExpression(node, node.arguments[0]),
    };
  },
};

// Queries of the service's own database live in a store module (any folder named store), the source's in the source
// reader (migration/source): a kysely builder or raw SQL anywhere else is a query out of place (no-restricted-syntax).
const queriesOutOfPlace = [
  ...['selectFrom', 'insertInto', 'updateTable', 'deleteFrom', 'replaceInto', 'mergeInto'].map((name) => ({
    selector: `CallExpression[callee.property.name='${name}']`,
    message: `${name}: queries live in a store module (**/store/**) or the source reader (migration/source/)`,
  })),
  {
    selector: "CallExpression[callee.object.name='sql']",
    message: 'raw SQL lives in a store module (**/store/**) or the source reader (migration/source/)',
  },
  {
    selector: "TaggedTemplateExpression[tag.name='sql']",
    message: 'raw SQL lives in a store module (**/store/**) or the source reader (migration/source/)',
  },
];

module.exports = { layers, ZONES, queriesOutOfPlace };
