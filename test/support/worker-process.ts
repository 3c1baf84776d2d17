import type { Worker } from '@temporalio/worker';

/** The main of a test's worker process: builds the worker, says `ready` on stdout, runs it until killed. */
export function runWorkerProcess(start: () => Promise<Worker>): void {
  start()
    .then(async (worker) => {
      process.stdout.write('ready\n');
      await worker.run();
    })
    .catch((error) => {
      console.error(error);
      process.exit(1);
    });
}
