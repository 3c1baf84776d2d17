import type { Client } from '@temporalio/client';
import type { Operations } from '../../platform/http/operations';
import { pingStore, type Db } from '../../platform/store/database';
import { within } from '../../platform/net/within';

/** `ok`, or why the dependency did not answer. */
async function probe(check: () => Promise<unknown>): Promise<string> {
  try {
    await within(3000, check(), () => new Error('no answer within 3 s'));
    return 'ok';
  } catch (error) {
    return `unreachable: ${(error as Error).message}`;
  }
}

export function healthOperations({ db, temporal }: { db: Db; temporal: Client }): Operations {
  return {
    getHealth: async (_req, res) => {
      const [store, workflows] = await Promise.all([
        probe(() => pingStore(db)),
        probe(() => temporal.connection.workflowService.getSystemInfo({})),
      ]);
      const healthy = store === 'ok' && workflows === 'ok';
      res.status(healthy ? 200 : 503).json({ status: healthy ? 'ok' : 'unavailable', store, temporal: workflows });
    },
  };
}
