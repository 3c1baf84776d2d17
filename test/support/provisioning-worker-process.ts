import { NativeConnection, type Worker } from '@temporalio/worker';
import { runWorkerProcess } from './worker-process';
import { createProvisioningActivities } from '../../activities/provisioning';
import { parseConfig } from '../../config/load';
import { createServiceContext } from '../../composition/service-context';
import { createProvisioningWorker, workerHome } from '../../workers/create-worker';

/**
 * A provisioning worker in a process of its own, so a test can SIGKILL it. It kills itself right after a step has
 * done its work and before the workflow task that ran it is recorded, so the replay on the next worker runs every step
 * of that task again:
 * - KILL_AFTER_CREATE_USER=N: after its N-th first step (createUserAndCallApps) for a user with a password has written
 *   the user, called the apps and recorded them (it once stranded users whose stashed password hash the first run had
 *   consumed);
 * - KILL_AFTER_DELETE_USER=N: after its N-th deleteUser, the last step of a refused creation (it once failed the
 *   replay of a refused creation with a password, whose hash the attempt had removed along with the user);
 * - KILL_AFTER_REMOVE_USER=N: after its N-th deleteUser or deactivateUser, before the deprovisioning it leads to is
 *   started (a replay once found the user already gone and told no app).
 */
async function startWorker(): Promise<Worker> {
  const config = parseConfig(JSON.parse(process.env.SERVICE_CONFIG!));
  const context = await createServiceContext(config, config.Database.Url!);
  const killAfterCreate = Number(process.env.KILL_AFTER_CREATE_USER ?? 0);
  const killAfterDelete = Number(process.env.KILL_AFTER_DELETE_USER ?? 0);
  const killAfterRemove = Number(process.env.KILL_AFTER_REMOVE_USER ?? 0);
  let created = 0;
  let deleted = 0;
  let removed = 0;
  const real = createProvisioningActivities(context);
  const activities = {
    ...real,
    async createUserAndCallApps(input: Parameters<typeof real.createUserAndCallApps>[0]) {
      const result = await real.createUserAndCallApps(input);
      if (input.credentialRef && ++created === killAfterCreate) process.kill(process.pid, 'SIGKILL');
      return result;
    },
    async deleteUser(...args: Parameters<typeof real.deleteUser>) {
      const result = await real.deleteUser(...args);
      const nth = { deleted: ++deleted, removed: ++removed };
      if (nth.deleted === killAfterDelete || nth.removed === killAfterRemove) process.kill(process.pid, 'SIGKILL');
      return result;
    },
    async deactivateUser(...args: Parameters<typeof real.deactivateUser>) {
      const result = await real.deactivateUser(...args);
      if (++removed === killAfterRemove) process.kill(process.pid, 'SIGKILL');
      return result;
    },
  };
  const connection = await NativeConnection.connect({ address: config.Temporal.Address! });
  const bundle = { codePath: process.env.TEST_WORKFLOW_BUNDLE! };
  return createProvisioningWorker(workerHome(connection, config, bundle), context, activities);
}

runWorkerProcess(startWorker);
