import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { apiWorkflowRunner } from '../../composition/api-dependencies';
import { purgeDeadReservations } from '../../provisioning/creation';
import { provisioningWorkflowId } from '../../provisioning/workflows/ids';
import { eventually, uniqueEmail, useHarness } from '../support/harness';

// A database of its own: the purge looks at every reservation, and other files' attempts must not meet it.
const h = useHarness({ apps: { crm: {} }, ownDatabase: true });

const reserved = () =>
  h.context.db
    .selectFrom('creation_reservations')
    .select('workflow_id')
    .execute()
    .then((rows) => rows.map((r) => r.workflow_id));

/** A reservation as an API leaves it when it dies between taking it and releasing it, `agedSeconds` ago. */
async function leftBehind(workflowId: string, agedSeconds: number): Promise<void> {
  await h.context.db
    .insertInto('creation_reservations')
    .values({
      normalized_email: uniqueEmail('left').toUpperCase(),
      workflow_id: workflowId,
      created_at: sql<Date>`now() - make_interval(secs => ${agedSeconds})`,
    })
    .execute();
}

// Issue 37 item 19: a dead API's reservation (an e-mail address) stayed in the store for ever.
test('the hourly purge clears reservations whose attempt ended or never started, and keeps live ones', async () => {
  const neverStarted = provisioningWorkflowId(randomUUID());
  await leftBehind(neverStarted, 120);
  const created = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('ended') });
  expect(created.status).toBe(201);
  const ended = provisioningWorkflowId(created.body.userId);
  await leftBehind(ended, 120);
  // Within its grace: its API may be about to start the workflow.
  const young = provisioningWorkflowId(randomUUID());
  await leftBehind(young, 0);
  // An attempt still running, its reservation as old as the others.
  h.apps.crm.state.behaviour = { tryDelayMs: 4_000 };
  const runningEmail = uniqueEmail('running');
  const answer = h.admin('POST', '/api/v1/profile/', { email: runningEmail });
  const running = await eventually(async () => {
    const row = await h.context.db
      .selectFrom('creation_reservations')
      .select('workflow_id')
      .where('normalized_email', '=', runningEmail.toUpperCase())
      .executeTakeFirstOrThrow();
    expect(await apiWorkflowRunner(h.client, h.config).isRunning(row.workflow_id)).toBe(true);
    return row.workflow_id;
  });
  await h.context.db
    .updateTable('creation_reservations')
    .set({ created_at: sql<Date>`now() - interval '2 minutes'` })
    .where('workflow_id', '=', running)
    .execute();

  expect(await purgeDeadReservations(h.context.db, apiWorkflowRunner(h.client, h.config))).toBe(2);
  const left = await reserved();
  expect(left).not.toContain(neverStarted);
  expect(left).not.toContain(ended);
  expect(left).toEqual(expect.arrayContaining([young, running]));
  expect((await answer).status).toBe(201);
}, 60_000);
