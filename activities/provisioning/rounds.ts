import type { UserProfile } from '../../store/users';
import type { AppRef } from '../../store/provisioning-apps';
import { applyApproval, assignedBy, type Approval } from '../../workflows/approval';
import type { FinishResult } from './index';
import type { TryVerdict } from './tcc-client';

/**
 * The Try and Confirm phases of the spec's state table, walked in one step: one app after another in the given order,
 * each phase stopping at the first app that does not answer yes, Confirming only when every app approved. A step run
 * twice (the replay of a workflow task lost with its worker) sends the same calls again with the same transactionId,
 * which is what makes a TCC call safe to repeat.
 */
export interface TryRound {
  /** The apps that approved, in order, before the first refusal (all of them when there is none). */
  approvals: Approval[];
  /** The first app that refused, failed or timed out, and why. */
  rejection?: { appId: string; reason: string };
}

export interface ConfirmRound {
  /** The apps that confirmed, in order. */
  confirmed: string[];
  /** The first app whose Confirm failed; the apps after it were not called. */
  failure?: { appId: string; reason: string };
}

/** Trying: each app is asked with the user as the approvals before it left it (the spec's "later apps see"). */
export async function tryInTurn(
  apps: AppRef[],
  user: UserProfile,
  tryOne: (appId: string, user: UserProfile) => Promise<TryVerdict>,
): Promise<TryRound> {
  const approvals: Approval[] = [];
  let seen = user;
  for (const { appId } of apps) {
    let verdict: TryVerdict;
    try {
      verdict = await tryOne(appId, seen);
    } catch (error) {
      verdict = { approved: false, reason: `Try to app ${appId} ${(error as Error).message}` };
    }
    if (!verdict.approved) return { approvals, rejection: { appId, reason: verdict.reason } };
    const approval = { appId, organizationId: verdict.organizationId, customAttributes: verdict.customAttributes };
    approvals.push(approval);
    seen = applyApproval(seen, approval);
  }
  return { approvals };
}

/** Confirming, in the same order; the first failure ends the round. */
export async function confirmInTurn(
  appIds: string[],
  confirmOne: (appId: string) => Promise<void>,
): Promise<ConfirmRound> {
  const confirmed: string[] = [];
  for (const appId of appIds) {
    try {
      await confirmOne(appId);
    } catch (error) {
      return { confirmed, failure: { appId, reason: `Confirm to app ${appId} ${(error as Error).message}` } };
    }
    confirmed.push(appId);
  }
  return { confirmed };
}

/** Confirming happens only when every app approved; after a refusal nothing is confirmed. */
export type TccRounds =
  { tried: Required<TryRound>; confirmed?: undefined } | { tried: { approvals: Approval[] }; confirmed: ConfirmRound };

/**
 * The rounds of a step that failed as a whole after it may have sent calls (its backstop on a stalled worker): which
 * apps approved or confirmed is unknown, so it counts as a rejection and every app counts as one to cancel.
 */
export function failedAsAWhole(apps: AppRef[], reason: string): TccRounds {
  return {
    tried: {
      approvals: apps.map((a) => ({ appId: a.appId })),
      rejection: { appId: apps[0].appId, reason: `Try to app ${apps[0].appId} ${reason}` },
    },
  };
}

/** Trying, then Confirming the apps that approved (all of them, or the phase ends before). */
export async function tryThenConfirmInTurn(
  apps: AppRef[],
  user: UserProfile,
  tryOne: (appId: string, user: UserProfile) => Promise<TryVerdict>,
  confirmOne: (appId: string) => Promise<void>,
): Promise<TccRounds> {
  const { approvals, rejection } = await tryInTurn(apps, user, tryOne);
  if (rejection) return { tried: { approvals, rejection } };
  return {
    tried: { approvals },
    confirmed: await confirmInTurn(
      approvals.map((a) => a.appId),
      confirmOne,
    ),
  };
}

/** What the apps that confirmed assigned, as the store records it with their provisions. */
export type Assigned = NonNullable<ReturnType<typeof assignedBy>>;

/**
 * The calls, then the records of the apps that confirmed, in the step that made the calls. Once a call is sent
 * nothing fails this: calls that end unexpectedly count as failed as a whole, and records that cannot be written now
 * (`record` answers undefined) are left to the workflow's step retried until it lands, so the calls are never made
 * again for a fault of the records.
 */
export async function tryConfirmThenRecord(
  apps: AppRef[],
  user: UserProfile,
  tryOne: (appId: string, user: UserProfile) => Promise<TryVerdict>,
  confirmOne: (appId: string) => Promise<void>,
  record: (confirmedApps: string[], assigned: Assigned | undefined) => Promise<FinishResult | undefined>,
): Promise<{ rounds: TccRounds; finished?: FinishResult }> {
  const rounds = await tryThenConfirmInTurn(apps, user, tryOne, confirmOne).catch((error: unknown) =>
    failedAsAWhole(apps, `failed: ${(error as Error).message}`),
  );
  const confirmedApps = rounds.confirmed?.confirmed ?? [];
  if (confirmedApps.length === 0) return { rounds };
  const confirmed = rounds.tried.approvals.slice(0, confirmedApps.length);
  const finished = await record(confirmedApps, assignedBy(user, confirmed));
  return finished ? { rounds, finished } : { rounds };
}
