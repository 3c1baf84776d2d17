import { createServer } from 'node:http';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { stopAfterAll, type Harness } from './harness';
import { publicClient } from './relying-party';
import { closeServer, listen, listeningUrl } from '../../platform/net/listen';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (or CHROMIUM_PATH) through playwright-core; as root it needs --no-sandbox. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  return chromium
    .launch({ executablePath, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] })
    .catch((error: Error) => {
      throw new Error(
        `no Chromium at ${executablePath} (apt-get install chromium, or set CHROMIUM_PATH): ${error.message}`,
      );
    });
}

/** The client application a browser returns to after signing in: any path answers "Back in the app". */
export async function startReturnApp(): Promise<{ callback: string; close: () => Promise<void> }> {
  const server = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Back in the app</h1>'),
  );
  await listen(server, 0, '127.0.0.1', 'test app', 'port');
  return { callback: `${listeningUrl(server, '127.0.0.1')}/callback`, close: () => closeServer(server) };
}

/** Where the browser tests save what a person saw (test-output/screenshots). */
export const SCREENSHOTS = join(__dirname, '..', '..', 'test-output', 'screenshots');

/**
 * A real browser, and a public client of the harness's service that returns to a loopback app (`callback`), set up
 * before the file's tests and stopped after them.
 */
export function useBrowserClient(
  h: Pick<Harness, 'admin'>,
  client: { id: string; name: string; scopes: string[] },
): { browser: Browser; callback: string } {
  const state = {} as { browser: Browser; callback: string; app?: Awaited<ReturnType<typeof startReturnApp>> };
  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    state.browser = await launchChromium();
    state.app = await startReturnApp();
    state.callback = state.app.callback;
    const put = await h.admin('PUT', `/api/v1/clients/${client.id}`, {
      ClientName: client.name,
      ...publicClient(state.callback, client.scopes),
    });
    expect(put.status).toBe(201);
  }, 60_000);
  stopAfterAll(() => [state.browser, state.app]);
  return state;
}
