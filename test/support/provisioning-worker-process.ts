import { NativeConnection, type Worker } from '@temporalio/worker';
import { runWorkerProcess } from './worker-process';
import { createProvisioningActivities } from '../../activities/provisioning';
import { parseConfig } from '../../config/load';
import { createServiceContext } from '../../composition/service-context';
import { createProvisioningWorker, workerHome } from '../../workers/create-worker';

/**
 * A provisioning worker in a process of its own, so a test can SIGKILL it. With KILL_AFTER_CREATE_USER=N it kills
 * itself right after its N-th first step (createUserAndCallApps) for a user with a password has written the user, called
 * the apps and recorded them, before the workflow task that ran it is recorded: the replay on the next worker runs that
 * step again, the fault the crash-safety suite reproduces (it once stranded users whose stashed password hash the first
 * run had consumed).
 */
async function startWorker(): Promise<Worker> {
  const config = parseConfig(JSON.parse(process.env.SERVICE_CONFIG!));
  const context = await createServiceContext(config, config.Database.Url!);
  const killAfter = Number(process.env.KILL_AFTER_CREATE_USER ?? 0);
  let created = 0;
  const real = createProvisioningActivities(context);
  const activities = {
    ...real,
    async createUserAndCallApps(input: Parameters<typeof real.createUserAndCallApps>[0]) {
      const result = await real.createUserAndCallApps(input);
      if (input.credentialRef && ++created === killAfter) process.kill(process.pid, 'SIGKILL');
      return result;
    },
  };
  const connection = await NativeConnection.connect({ address: config.Temporal.Address! });
  const bundle = { codePath: process.env.TEST_WORKFLOW_BUNDLE! };
  return createProvisioningWorker(workerHome(connection, config, bundle), context, activities);
}

runWorkerProcess(startWorker);
