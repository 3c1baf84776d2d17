import { createServer } from 'node:http';
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
