import { verifyPassword } from '../../platform/security/password-hashing';
import { findUserIdByEmail } from '../../platform/store/users';
import { provisioningWorkflowId } from '../../provisioning/workflows/ids';
import { storedPasswordHash, uniqueEmail, useHarness } from '../support/harness';
import { codecOf, historyText } from '../support/history';

const h = useHarness({
  apps: { crm: {}, billing: {} },
  config: { Auth: { PasswordPolicy: { MinLength: 10, RequireDigit: true } } },
});

const register = (body: unknown) => h.request('POST', '/api/auth/register', body);

describe('self-service registration', () => {
  test('registration is public, provisions into every configured app and answers 201 without the hash', async () => {
    const email = uniqueEmail('reg');
    const password = 'a long passphrase 7';
    const res = await register({ email, password, firstName: 'Reg' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ email, firstName: 'Reg', provisionedApps: ['billing', 'crm'] });
    expect(JSON.stringify(res.body)).not.toMatch(/hash|password|AQAAAA/i);
    const password_hash = await storedPasswordHash(h, res.body.userId);
    expect(await verifyPassword(password, password_hash!)).toBe(true);
    const workflowId = provisioningWorkflowId(res.body.userId);
    // Opened with the payload key, the history holds the e-mail but never the password or its hash.
    const text = await historyText(h.client, workflowId, codecOf(h.config));
    expect(text).toContain(email);
    expect(text).not.toContain(password);
    expect(text).not.toContain(password_hash!);
    expect(await historyText(h.client, workflowId)).not.toContain(email);
  });

  test('a password that breaks the policy answers 400 naming each rule, and nothing starts', async () => {
    const email = uniqueEmail('weak');
    const res = await register({ email, password: 'short' });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('password: must be at least 10 characters');
    expect(res.body.detail).toContain('password: must contain a digit');
    expect(res.body.detail).not.toContain('short');
    expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
    expect(h.apps.crm.state.calls.some((c) => (c.body as { email?: string })?.email === email)).toBe(false);
  });

  test('an app rejecting the registration answers 422 with its reason and the user is gone', async () => {
    h.apps.billing.state.behaviour = { rejectWith: 'registrations are closed' };
    const email = uniqueEmail('reg-reject');
    const res = await register({ email, password: 'a long passphrase 8' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toBe('app billing: registrations are closed');
    expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
  });

  test('a registered e-mail answers 409; an invalid body 400', async () => {
    const email = uniqueEmail('reg-dup');
    expect((await register({ email, password: 'a long passphrase 9' })).status).toBe(201);
    const duplicate = await register({ email, password: 'a long passphrase 9' });
    expect(duplicate.status).toBe(409);
    // The public endpoint reveals no ids.
    expect(JSON.stringify(duplicate.body)).not.toContain(String(await findUserIdByEmail(h.context.db, email)));
    expect(duplicate.body.userId).toBeUndefined();
    const bad = await register({ email: 'nope', password: 'a long passphrase 9' });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/^email:/);
  });
});

// A harness and a database of its own, so the budget (counted in the store) is this test's alone whatever else runs.
describe('the per-client registration budget', () => {
  const limited = useHarness({
    apps: {},
    ownDatabase: true,
    config: { Auth: { RegistrationRateLimit: { PermitLimit: 3, WindowSeconds: 60 } } },
  });

  test('more registrations from one client than the budget answer 429 with Retry-After', async () => {
    const answers: number[] = [];
    let answer: Awaited<ReturnType<typeof register>> | undefined;
    for (let i = 0; i < 10 && !answer; i++) {
      const res = await limited.request('POST', '/api/auth/register', { email: 'not-an-email', password: 'x' });
      answers.push(res.status);
      if (res.status === 429) answer = res;
    }
    expect(answer).toBeDefined();
    expect(Number(answer!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(answer!.body.detail).toMatch(/at most 3 registrations per 60 s/);
    expect(answers.filter((s) => s !== 429)).toHaveLength(3);
  });
});
