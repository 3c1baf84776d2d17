import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { freePort } from '../../dev/ports';
import { PAYLOAD_KEY_FILE } from '../../platform/config/key-ring';
import { provisioningWorkflowId } from '../../provisioning/workflows/ids';
import { ADMIN_KEY, stopAfterAll, TEST_DATA_PROTECTION_KEY, uniqueEmail } from '../support/harness';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';

// `npm start` as a local operator runs it: the embedded Temporal dev server with its UI, pointed at the API's codec
// endpoint. The operator opens a provisioning workflow in the UI and reads its input opened, with no extra step.
const SCREENSHOTS = join(__dirname, '..', '..', 'test-output', 'screenshots');

let browser: Browser;
let service: ServiceProcess;
let api: string;
let ui: string;
let dataDir: string;
let temporalPort: string;

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  browser = await chromium.launch({ executablePath, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
  const [apiPort, uiPort] = [await freePort(), await freePort()];
  temporalPort = String(await freePort());
  dataDir = mkdtempSync(join(tmpdir(), 'ips-start-'));
  service = spawnService('cli/start.ts', {
    DATABASE_URL: process.env.TEST_DATABASE_URL!,
    DataProtection__Keys__0__Id: 'test',
    DataProtection__Keys__0__Key: TEST_DATA_PROTECTION_KEY,
    Auth__AdminApiKeys: ADMIN_KEY,
    Api__Port: String(apiPort),
    Temporal__UiPort: String(uiPort),
    Temporal__TaskQueue: `test-ui-${apiPort}`,
    Embedded__TemporalPort: temporalPort,
    Embedded__DataDir: dataDir,
  });
  await waitForOutput(service, /start: ready/, 120_000);
  api = `http://127.0.0.1:${apiPort}`;
  ui = `http://127.0.0.1:${uiPort}`;
}, 180_000);

stopAfterAll(() => [service, browser]);

/** Waits until every text is on the page, frames included (the UI renders user metadata as markdown in a frame). */
async function untilShown(page: Page, texts: string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const shown = (
      await Promise.all(
        page.frames().map((frame) =>
          frame
            .locator('body')
            .innerText()
            .catch(() => ''),
        ),
      )
    )
      .join('\n')
      .replace(/\s+/g, ' ');
    const missing = texts.filter((text) => !shown.includes(text));
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`not shown: ${missing.join(', ')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('npm start generates a payload key and says so', () => {
  expect(service.output()).toContain(`temporal: generated a payload key into ${join(dataDir, PAYLOAD_KEY_FILE)}`);
  expect(JSON.parse(readFileSync(join(dataDir, PAYLOAD_KEY_FILE), 'utf8'))).toHaveLength(1);
});

test('the embedded Temporal UI shows a provisioning workflow with its input opened through the codec endpoint', async () => {
  const email = uniqueEmail('ui');
  const created = await fetch(`${api}/api/v1/profile/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
    body: JSON.stringify({ email, firstName: 'Opal', lastName: 'Operator' }),
  });
  expect(created.status).toBe(201);
  const { userId } = (await created.json()) as { userId: string };

  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  try {
    await page.goto(`${ui}/namespaces/default/workflows/${encodeURIComponent(provisioningWorkflowId(userId))}`);
    // The UI fetches the history, then asks the codec endpoint to open each payload.
    await page.getByText(email).first().waitFor({ timeout: 60_000 });
    await page.screenshot({ path: join(SCREENSHOTS, 'temporal-ui-decoded-input.png'), fullPage: true });
    const text = await page.locator('body').innerText();
    expect(text).toContain('Opal');
    expect(text).not.toContain('binary/encrypted');
    // Robustness issue, item 17: each attempt says what it is, and how it ended, where an operator looks.
    const summary = `admin-api: createUserAndProvision for user ${userId}`;
    await page.getByText('User Metadata').first().click();
    await untilShown(page, [summary, 'Outcome: provisioned']);
    await page.screenshot({ path: join(SCREENSHOTS, 'temporal-ui-user-metadata.png'), fullPage: true });
    await page.goto(`${ui}/namespaces/default/workflows`);
    await page.getByText(provisioningWorkflowId(userId)).first().waitFor({ timeout: 30_000 });
    await page.screenshot({ path: join(SCREENSHOTS, 'temporal-ui-list.png'), fullPage: true });
  } finally {
    await page.close();
  }
}, 120_000);

// Robustness issue, items 12 and 13.
test('npm start says what to do next: how to call the admin API', () => {
  expect(service.output()).toMatch(
    /start: next: the admin API takes .{0,2}Authorization: Bearer <a key of Auth:AdminApiKeys>/,
  );
});

test('a second start whose embedded Temporal port another Temporal server holds stops, naming the port', async () => {
  const second = spawnService('cli/start.ts', {
    DATABASE_URL: process.env.TEST_DATABASE_URL!,
    DataProtection__Keys__0__Id: 'test',
    DataProtection__Keys__0__Key: TEST_DATA_PROTECTION_KEY,
    Api__Port: String(await freePort()),
    Temporal__UiPort: String(await freePort()),
    Embedded__TemporalPort: temporalPort,
    Embedded__DataDir: mkdtempSync(join(tmpdir(), 'ips-second-')),
  });
  expect(await second.exited).toBe(1);
  expect(second.output()).toContain(
    `temporal: port ${temporalPort} on 127.0.0.1 is already in use by another process; stop that process or set Embedded:TemporalPort to a free port`,
  );
  expect(second.output()).not.toContain('start: ready');
}, 60_000);

test('a requested stop (SIGINT) ends with status 0 and no warning or error after it', async () => {
  const before = service.output().length;
  service.child.kill('SIGINT');
  expect(await service.exited).toBe(0);
  const after = service.output().slice(before);
  expect(after).toContain('start: stopped the API, the worker and the Temporal dev server (SIGINT)');
  expect(after).not.toMatch(/WARN|ERROR|"level":(40|50|60)/);
}, 60_000);
