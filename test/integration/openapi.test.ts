import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { ROUTES } from '../../api/openapi/routes';
import { useHarness } from '../support/harness';
import { OPENAPI_DOCUMENT } from '../support/openapi-check';

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

/** The fallbacks' answer to a path no route serves: what a route whose handler is not mounted would answer. */
const NO_ROUTE = /^no (route for|SCIM endpoint) /;

test('every route of the table answers through its own handler, with every optional surface on', async () => {
  const scimToken = (await h.admin('POST', '/api/v1/scim/tokens', { description: 'route check' })).body.token;
  // The control: a path no route serves gets the fallback's answer, so the check below can fail.
  expect((await h.admin('GET', '/api/v1/nowhere')).body.detail).toMatch(NO_ROUTE);
  expect(
    (await h.request('GET', '/scim/v2/Nowhere', undefined, { authorization: `Bearer ${scimToken}` })).body.detail,
  ).toMatch(NO_ROUTE);
  const unserved: string[] = [];
  for (const route of ROUTES) {
    const path = route.path.replace(/\{\w+\}/g, 'route-check-missing');
    const body = ['post', 'put', 'patch'].includes(route.method) ? {} : undefined;
    const res =
      route.auth === 'scim'
        ? await h.request(route.method.toUpperCase(), path, body, { authorization: `Bearer ${scimToken}` })
        : await h.admin(route.method.toUpperCase(), path, body);
    if (res.status === 405 || NO_ROUTE.test(String(res.body?.detail ?? '')))
      unserved.push(`${route.method.toUpperCase()} ${route.path}`);
  }
  expect(unserved).toEqual([]);
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
  expect(schema.schemas.createUserBody.required).toEqual(['email']);
  const res = await h.admin('POST', '/api/v1/profile/', { firstName: 'No mail' });
  expect(res.status).toBe(400);
  expect(res.body.detail).toMatch(/^email: /);
});

test('the reference page at /docs renders the document from files the service serves itself', async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await launchChromium();
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
