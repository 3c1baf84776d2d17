import { NativeConnection, type Worker } from '@temporalio/worker';
import { runWorkerProcess } from './worker-process';
import {
  createProvisioningActivities,
  type ProvisioningActivities,
} from '../../provisioning/activities/provisioning-activities';
import { parseConfig } from '../../platform/config/load';
import { createServiceContext } from '../../composition/service-context';
import { createProvisioningWorker, workerHome } from '../../workers/create-worker';

/**
 * A provisioning worker in a process of its own, so a test can SIGKILL it. With KILL_AFTER_STEP=<activity>:<N> it
 * kills itself right after the N-th run of that step has done its work, before the workflow task that ran it is
 * recorded: the replay on the next worker runs every step of that task again. KILL_ONLY_WITH_PASSWORD=1 counts only
 * runs for a user with a password (a stashed hash). Faults it reproduced: a first step whose replay found the stashed
 * hash consumed; a refused creation whose replay found the hash and the user both gone; a deletion or deactivation
 * whose replay found the user gone and told no app.
 */
async function startWorker(): Promise<Worker> {
  const config = parseConfig(JSON.parse(process.env.SERVICE_CONFIG!));
  const context = await createServiceContext(config, config.Database.Url!);
  const real = createProvisioningActivities(context);
  const [step, nth] = (process.env.KILL_AFTER_STEP ?? ':0').split(':');
  const withPasswordOnly = process.env.KILL_ONLY_WITH_PASSWORD === '1';
  let runs = 0;
  const activities: ProvisioningActivities = Object.hasOwn(real, step)
    ? {
        ...real,
        async [step](...args: unknown[]) {
          const result: unknown = await (real[step as keyof ProvisioningActivities] as (...a: unknown[]) => unknown)(
            ...args,
          );
          const counted = !withPasswordOnly || (args[0] as { credentialRef?: string }).credentialRef !== undefined;
          if (counted && ++runs === Number(nth)) process.kill(process.pid, 'SIGKILL');
          return result;
        },
      }
    : real;
  const connection = await NativeConnection.connect({ address: config.Temporal.Address! });
  const bundle = { codePath: process.env.TEST_WORKFLOW_BUNDLE! };
  return createProvisioningWorker(workerHome(connection, config, bundle), context, activities);
}

runWorkerProcess(startWorker);
