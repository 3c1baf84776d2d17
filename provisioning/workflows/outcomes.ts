import type { UserProfile } from '../../platform/store/users';
import type { TransactionResult } from './transaction';

/** How an attempt for a user ends: the transaction's ending, or no user, or apps that do not exist. */
export type ProvisioningOutcome =
  | TransactionResult
  | { status: 'not-found'; userId: string }
  | { status: 'unknown-apps'; appIds: string[]; user: UserProfile };

/** How a creation ends: as an attempt does (and whether the refused user was deleted), or a duplicate. */
export type CreationOutcome =
  (ProvisioningOutcome & { userDeleted?: boolean }) | { status: 'duplicate'; detail: string; existingUserId?: string };
