import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { freePort } from '../../dev/ports';
import { PAYLOAD_KEY_FILE } from '../../security/key-ring-config';
import { provisioningWorkflowId } from '../../workflows/ids';
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

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  browser = await chromium.launch({ executablePath, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
  const [apiPort, uiPort, temporalPort] = [await freePort(), await freePort(), await freePort()];
  dataDir = mkdtempSync(join(tmpdir(), 'ips-start-'));
  service = spawnService('cli/start.ts', {
    DATABASE_URL: process.env.TEST_DATABASE_URL!,
    DataProtection__Keys__0__Id: 'test',
    DataProtection__Keys__0__Key: TEST_DATA_PROTECTION_KEY,
    Auth__AdminApiKeys: ADMIN_KEY,
    Api__Port: String(apiPort),
    Temporal__UiPort: String(uiPort),
    Temporal__TaskQueue: `test-ui-${apiPort}`,
    Embedded__TemporalPort: String(temporalPort),
    Embedded__DataDir: dataDir,
  });
  await waitForOutput(service, /start: ready/, 120_000);
  api = `http://127.0.0.1:${apiPort}`;
  ui = `http://127.0.0.1:${uiPort}`;
}, 180_000);

stopAfterAll(() => [service, browser]);

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
  } finally {
    await page.close();
  }
}, 120_000);
