import type { Client } from '@temporalio/client';
import { Router } from 'express';
import { pingStore, type Db } from '../../store/database';
import { within } from '../../composition/within';

/** `ok`, or why the dependency did not answer. */
async function probe(check: () => Promise<unknown>): Promise<string> {
  try {
    await within(3000, check(), () => new Error('no answer within 3 s'));
    return 'ok';
  } catch (error) {
    return `unreachable: ${(error as Error).message}`;
  }
}

export function healthRouter({ db, temporal }: { db: Db; temporal: Client }): Router {
  const router = Router();
  router.get('/healthz', async (_req, res) => {
    const [store, workflows] = await Promise.all([
      probe(() => pingStore(db)),
      probe(() => temporal.connection.workflowService.getSystemInfo({})),
    ]);
    const healthy = store === 'ok' && workflows === 'ok';
    res.status(healthy ? 200 : 503).json({ status: healthy ? 'ok' : 'unavailable', store, temporal: workflows });
  });
  return router;
}
