import { ADMIN_KEY, startHarness, uniqueEmail, type Harness } from '../support/harness';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ apps: { crm: {}, billing: {}, wiki: {} } });
});
afterAll(async () => {
  await h?.stop();
});

describe('admin user creation provisions into every configured app', () => {
  test('all apps approve: Confirm to all, one UserProvisions record per app, 201 with the user', async () => {
    const email = uniqueEmail('alice');
    const res = await h.admin('POST', '/api/v1/profile/', { email, firstName: 'Alice', password: 'correct horse battery' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ email, firstName: 'Alice', lastName: null, provisionedApps: ['billing', 'crm', 'wiki'] });
    expect(res.body.password).toBeUndefined();
    const provisions = await h.context.db.selectFrom('user_provisions').selectAll().where('user_id', '=', res.body.userId).execute();
    expect(provisions.map((p) => p.app_id).sort()).toEqual(['billing', 'crm', 'wiki']);
    for (const app of Object.values(h.apps)) {
      expect(app.state.confirmedUserIds()).toContain(res.body.userId);
      expect(app.state.calls.filter((c) => c.body?.userId === res.body.userId || c.path === '/confirm').map((c) => c.path)).toEqual(
        expect.arrayContaining(['/try', '/confirm']),
      );
    }
  });
});
