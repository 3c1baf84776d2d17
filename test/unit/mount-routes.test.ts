import express from 'express';
import type { AddressInfo } from 'node:net';
import { mountRoutes } from '../../api/mount-routes';
import type { RouteSpec } from '../../api/openapi/route-spec';

const route = (operationId: string, path: string, extra: Partial<RouteSpec> = {}): RouteSpec => ({
  operationId,
  method: 'get',
  path,
  summary: operationId,
  tag: 'Operations',
  auth: 'public',
  answers: { 200: 'ok' },
  ...extra,
});
const TABLE = [route('getThing', '/things/{id}'), route('listOptional', '/optional', { absent: 'only when enabled' })];
const guards = { admin: [], scim: [], public: [] };

test('a route of the table without its handler stops start-up, unless the table says when it is absent', () => {
  expect(() => mountRoutes(express(), TABLE, {}, guards)).toThrow(/GET \/things\/\{id\} has no handler named getThing/);
  expect(() => mountRoutes(express(), TABLE, { getThing: (_req, res) => res.end() }, guards)).not.toThrow();
});

test('a handler the table has no route for stops start-up: nothing is served outside the table', () => {
  expect(() =>
    mountRoutes(
      express(),
      TABLE,
      { getThing: (_req, res) => res.end(), deleteThing: (_req, res) => res.end() },
      guards,
    ),
  ).toThrow(/handlers without a route in api\/openapi\/routes.ts: deleteThing/);
});

test("each route is served at the table's template, behind its guard", async () => {
  const app = express();
  const seen: string[] = [];
  mountRoutes(
    app,
    [route('getThing', '/things/{id}', { auth: 'admin' })],
    { getThing: (req, res) => res.send(req.params.id) },
    {
      ...guards,
      admin: [(req, _res, next) => (seen.push(req.path), next())],
    },
  );
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/things/42`);
    expect(await res.text()).toBe('42');
    expect(seen).toEqual(['/things/42']);
  } finally {
    server.close();
  }
});
