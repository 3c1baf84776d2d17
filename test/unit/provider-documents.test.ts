import express from 'express';
import type { AddressInfo } from 'node:net';
import { answerFromCopy, type PublishedDocuments } from '../../sign-in/oidc/provider-documents';

// Discovery:ResponseCacheInterval as Duende's SetCache reads it: unset sends no Cache-Control, 0 forbids caching,
// N > 0 is max-age=N.
const DOCUMENTS: PublishedDocuments = new Map([
  ['/doc', { body: Buffer.from('{"a":1}'), contentType: 'application/json; charset=utf-8', etag: '"tag"' }],
]);

async function answered(cacheInterval: number | undefined, method = 'GET', path = '/doc') {
  const app = express();
  app.use((req, res) => {
    if (!answerFromCopy(DOCUMENTS, req, res, cacheInterval)) res.status(418).end();
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`, { method });
    return { status: answer.status, cache: answer.headers.get('cache-control'), pragma: answer.headers.get('pragma') };
  } finally {
    server.close();
  }
}

test.each([
  [undefined, null, null],
  [0, 'no-store, no-cache, max-age=0', 'no-cache'],
  [600, 'max-age=600', null],
])('ResponseCacheInterval %s: Cache-Control %s', async (interval, cache, pragma) => {
  expect(await answered(interval)).toEqual({ status: 200, cache, pragma });
});

test('other methods and other paths are left to the provider', async () => {
  expect((await answered(600, 'POST')).status).toBe(418);
  expect((await answered(600, 'GET', '/other')).status).toBe(418);
});
