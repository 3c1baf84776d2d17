import { patched } from '@temporalio/workflow';

/**
 * sdk-core records two events for every patch a run checks, its marker and an upsert of the TemporalChangeVersion
 * search attribute (a visibility write on the cluster), on every attempt. So a run started on this build records one
 * patch that stands for every change before it; a run recorded before that replays the patches it recorded then.
 * A later change checks its own id with hasChange() until it is folded in here under a new id (the old one joining
 * the ids it stands for).
 */
const CHANGES_TO_2026_11_24 = 'changes-to-2026-11-24';

/** Whether this run has the change that `patchId` guards: every run started since (one marker for them all). */
export function hasChange(patchId: string): boolean {
  return patched(CHANGES_TO_2026_11_24) || patched(patchId);
}
