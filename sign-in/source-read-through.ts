/**
 * The cutover's read-through window (Migration:ReadThrough, migration/read-through.ts) as sign-in sees it: the
 * composition root hands one over while the window is configured. Each answers false once the deadline has passed.
 */
export interface SourceReadThrough {
  /**
   * Migrates the source's user with this e-mail here, when there is one: 'migrated', 'absent' (none to migrate), or
   * 'unavailable' (the source could not say; whoever would make an account for the address refuses instead).
   */
  user(email: string): Promise<'migrated' | 'absent' | 'unavailable'>;
  /** Carries the source's refresh token with this handle over, when there is one; whether it did. */
  refreshToken(handle: string): Promise<boolean>;
  /**
   * Whether a token the last sweep carried over (under this source key) is still live at the source; throws when the
   * source cannot be asked. True once the window is closed.
   */
  liveAtSource: (key: string) => Promise<boolean>;
  /** Migration:ReadThrough:RetryAfterSeconds: what a refused registration or federated sign-in is told to wait. */
  retryAfterSeconds: number;
  /** Migration:ReadThrough:UnavailableMessage: the operator's words for such a refusal, when set. */
  unavailableMessage?: string;
}
