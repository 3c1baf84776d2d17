import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { expressPath, ROUTES } from '../../api/openapi/routes';
import { useHarness } from '../support/harness';
import { OPENAPI_DOCUMENT } from '../support/openapi-check';

// Express 5's router keeps no mount path on its layers; remember each one as it is mounted, before any app is built.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Router = require('router') as { prototype: { use: (...args: unknown[]) => unknown; stack: Layer[] } };
interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
  mountPath?: string;
}
const originalUse = Router.prototype.use;
Router.prototype.use = function (this: { stack: Layer[] }, ...args: unknown[]) {
  const before = this.stack.length;
  const result = originalUse.apply(this, args);
  const path = typeof args[0] === 'string' ? args[0] : '/';
  for (const layer of this.stack.slice(before)) layer.mountPath = path;
  return result;
};

/** Every method and path Express serves, with mount paths joined. */
function servedRoutes(stack: Layer[], prefix = ''): string[] {
  return stack.flatMap((layer) => {
    if (layer.route)
      return Object.keys(layer.route.methods).map(
        (method) => `${method.toUpperCase()} ${(prefix + layer.route!.path).replace(/(.)\/$/, '$1')}`,
      );
    if (layer.handle.stack)
      return servedRoutes(layer.handle.stack, prefix + (layer.mountPath === '/' ? '' : layer.mountPath));
    return [];
  });
}

/**
 * Served but deliberately not in the document: the sign-in and federation pages and protocol endpoints (documented by
 * OpenID Connect, SAML and the discovery document), the Temporal UI's codec endpoint, and the two HTML pages.
 */
const UNDOCUMENTED = [
  /^(GET|POST) \/interaction\//,
  /^(GET|POST) \/account\//,
  /^(GET|POST) \/oidc\/callback$/,
  /^(GET|POST) \/saml\/:id\/(acs|metadata)$/,
  /^POST \/codec\/(encode|decode)$/,
  /^GET \/docs(\/scim|\/assets\/reference\.js)?$/,
  // The SCIM discovery endpoints answer 405 with Allow: GET to every other method.
  /^_ALL \/scim\/v2\/ServiceProviderConfig,\/ResourceTypes,/,
];

// Every optional surface on: the store-backed app routes and the migration status endpoint.
const h = useHarness({
  apps: { crm: {} },
  config: { Provisioning: { AppProvider: 'Store' }, Migration: { MapStatusEndpoint: true } },
});
let browser: Browser;
const SCREENSHOTS = join(__dirname, '..', '..', 'test-output', 'screenshots');

afterAll(async () => {
  await browser?.close();
});

function expressApp() {
  return (h.api.app as unknown as { router: { stack: Layer[] } }).router;
}

test('every route Express serves is in the OpenAPI document, and every documented route is served', () => {
  const served = new Set(servedRoutes(expressApp().stack));
  const documented = ROUTES.map((r) => `${r.method.toUpperCase()} ${expressPath(r.path)}`);
  const missing = [...served].filter(
    (route) => !documented.includes(route) && !UNDOCUMENTED.some((p) => p.test(route)),
  );
  expect(missing).toEqual([]);
  expect(documented.filter((route) => !served.has(route))).toEqual([]);
});

test('GET /openapi.json serves the OpenAPI 3.1 document with error shapes, security schemes and statuses', async () => {
  const res = await h.request('GET', '/openapi.json');
  expect(res.status).toBe(200);
  expect(res.body.openapi).toMatch(/^3\.1\./);
  expect(res.body.servers).toEqual([{ url: h.api.publicUrl }]);
  expect(Object.keys(res.body.components.securitySchemes).sort()).toEqual(['adminBearer', 'scimToken']);
  const create = res.body.paths['/api/v1/profile'].post;
  expect(Object.keys(create.responses).sort()).toEqual(
    ['201', '400', '401', '403', '409', '413', '415', '422', '500', '502', '503', '504'].sort(),
  );
  expect(create.responses['422'].content['application/problem+json'].schema).toEqual({
    $ref: '#/components/schemas/Problem',
  });
  expect(res.body.paths['/scim/v2/Users'].post.responses['409'].content['application/scim+json'].schema).toEqual({
    $ref: '#/components/schemas/ScimError',
  });
  expect(create.security).toEqual([{ adminBearer: [] }]);
  // Every reference points at a component that exists.
  const refs = [...JSON.stringify(res.body).matchAll(/"\$ref":"#\/components\/(\w+)\/(\w+)"/g)];
  for (const [, section, name] of refs) expect(res.body.components[section]).toHaveProperty(name);
  expect(res.body).toEqual(JSON.parse(JSON.stringify({ ...OPENAPI_DOCUMENT, servers: res.body.servers })));
});

test('a request body the document forbids is what the API refuses, with the document naming the field', async () => {
  const schema = OPENAPI_DOCUMENT.components as { schemas: Record<string, { required?: string[] }> };
  expect(schema.schemas.postApiV1ProfileBody.required).toEqual(['email']);
  const res = await h.admin('POST', '/api/v1/profile/', { firstName: 'No mail' });
  expect(res.status).toBe(400);
  expect(res.body.detail).toMatch(/^email: /);
});

test('the reference page at /docs renders the document from files the service serves itself', async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
  const page = await browser.newPage();
  const outside: string[] = [];
  page.on('request', (request) => {
    if (!request.url().startsWith(h.api.url) && !request.url().startsWith('data:')) outside.push(request.url());
  });
  await page.goto(`${h.api.url}/docs`);
  await page.getByText('Create a user and provision it into every configured app').first().waitFor();
  await page.getByText('Identity provisioning and migration service').first().waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, 'api-reference.png'), fullPage: false });
  // Open one operation: its answers are listed with what each means.
  await page.getByText('Create a user and provision it into every configured app').first().click();
  await page.getByText('An app rejected the user or failed').first().waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, 'api-reference-operation.png'), fullPage: false });
  expect(outside).toEqual([]);
}, 60_000);
