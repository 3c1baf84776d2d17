import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import type { AppConfig } from '../../platform/config/config-schema';
import { migrationSweep } from '../workflows/migration';
import { migrationOptions } from './control';

export const SWEEP_SCHEDULE_ID = 'migration-delta-sweep';

export type SweepTiming = { every: string } | { cron: string };

/** A Temporal Schedule of CreateOnly delta sweeps; overlapping sweeps are skipped, not queued. */
export async function createSweepSchedule(client: Client, config: AppConfig, timing: SweepTiming): Promise<void> {
  await client.schedule.create({
    scheduleId: SWEEP_SCHEDULE_ID,
    spec: 'every' in timing ? { intervals: [{ every: timing.every as never }] } : { cronExpressions: [timing.cron] },
    policies: { overlap: 'SKIP' },
    action: {
      type: 'startWorkflow',
      workflowType: migrationSweep,
      taskQueue: config.Temporal.MigrationTaskQueue,
      args: [{ options: migrationOptions(config, { dryRun: false, usersMode: 'CreateOnly' }) }],
    },
  });
}

export async function describeSweepSchedule(client: Client) {
  try {
    const d = await client.schedule.getHandle(SWEEP_SCHEDULE_ID).describe();
    return {
      id: d.scheduleId,
      paused: d.state.paused,
      spec: d.spec,
      recentRuns: d.info.recentActions.map((a) => ({
        scheduledAt: a.scheduledAt,
        workflowId: a.action.workflow.workflowId,
      })),
      nextRuns: d.info.nextActionTimes.slice(0, 3),
    };
  } catch (error) {
    if (error instanceof ScheduleNotFoundError) return undefined;
    throw error;
  }
}

export async function setSweepSchedulePaused(client: Client, paused: boolean): Promise<void> {
  const handle = client.schedule.getHandle(SWEEP_SCHEDULE_ID);
  if (paused) await handle.pause('paused from the migration command line');
  else await handle.unpause('resumed from the migration command line');
}

export async function deleteSweepSchedule(client: Client): Promise<void> {
  await client.schedule.getHandle(SWEEP_SCHEDULE_ID).delete();
}
