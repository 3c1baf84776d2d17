/**
 * The cutover's read-through window (Migration:ReadThrough, migration/read-through.ts) as sign-in sees it: the
 * composition root hands one over while the window is configured. Each answers false once the deadline has passed.
 */
export interface SourceReadThrough {
  /** Migrates the source's user with this e-mail here, when there is one; whether it did. */
  user(email: string): Promise<boolean>;
  /** Carries the source's refresh token with this handle over, when there is one; whether it did. */
  refreshToken(handle: string): Promise<boolean>;
}
