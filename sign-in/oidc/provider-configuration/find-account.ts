import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { Db } from '../../../platform/store/database';
import { claimsOf } from '../claims';
import { idpClaimOf } from '../token-shape';
import type { SignedInAsOf } from '../interactions/interaction-context';

/**
 * Clears who signed in to a session (oidc-provider's Session.loginAccount, undone). oidc-provider's session proxy
 * refuses to set accountId to nothing, so the fields are deleted; setting `authorizations` marks the session changed,
 * for it to be saved so.
 */
function endSignIn(session: {
  accountId?: string;
  loginTs?: number;
  amr?: string[];
  acr?: string;
  authorizations?: unknown;
}) {
  delete session.accountId;
  delete session.loginTs;
  delete session.amr;
  delete session.acr;
  session.authorizations = {};
}

/**
 * Whether the authorization resumes a login whose user has ended every sign-in since the password step read it: the
 * stamp the step read (SignedInAsOf, interaction-context.ts) is no longer the user's.
 */
function endedSinceChecked(ctx: KoaContextWithOIDC, sub: string, currentStamp: string | null): boolean {
  const result = ctx.oidc?.result as (Partial<SignedInAsOf> & { login?: { accountId?: string } }) | undefined;
  return (
    result?.login?.accountId === sub && result.signedInAsOf !== undefined && result.signedInAsOf.stamp !== currentStamp
  );
}

/** The account of a subject, with its claims from the scopes store. */
export function findAccount(db: Db): NonNullable<Configuration['findAccount']> {
  return async (ctx, sub) => {
    const account = await claimsOf(db, sub);
    if (!account || endedSinceChecked(ctx, sub, account.securityStamp)) {
      // A session left by a user since deactivated or deleted signs nobody in, nor a login its user ended everywhere
      // while it was being checked: it is ended here, so the authorization asks who is signing in (the e-mail page)
      // instead of failing on an account that is gone.
      const session = ctx.oidc?.session;
      if (session?.accountId === sub) endSignIn(session);
      return undefined;
    }
    return {
      accountId: sub,
      // Duende's ID tokens name where the user signed in (`idp`), as its access tokens do (token-shape.ts).
      claims: (use) => ({ ...account.claims(), ...(use === 'id_token' ? idpClaimOf(ctx) : {}) }),
    };
  };
}
