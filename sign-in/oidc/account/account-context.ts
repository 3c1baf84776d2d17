import type { Request } from 'express';
import { z } from 'zod';
import { sendPage } from '../../../platform/http/html';
import { FIELD_BOUNDS } from '../../../platform/security/field-bounds';
import { countRecoveryCodes } from '../../store/accounts';
import { accountSessions, type AccountDependencies, type SignedInUser } from '../account-session';
import { mfaSettingsPage } from '../account-pages';
import { formField } from '../forms';
import { signInAgainPage } from '../sign-in-pages';

export const ACCOUNT_PAGE = '/account';
export const MFA_PAGE = '/account/mfa';

export const passwordForm = z.object({ password: formField(FIELD_BOUNDS.password) });

/** What every page of `/account` shares: its dependencies, the signed-in user and the answers of the MFA pages. */
export type AccountContext = ReturnType<typeof createAccountContext>;

export function createAccountContext(deps: AccountDependencies) {
  const sessions = accountSessions(deps);
  const { recentMinutes, isTheirPassword } = sessions;
  /** The page of a user who has two-step verification on: new codes or off. */
  const settings = async (user: SignedInUser, error?: string) =>
    mfaSettingsPage(await countRecoveryCodes(deps.db, user.id), user.hasPassword, user.token, error);
  return {
    ...deps,
    ...sessions,
    html: sendPage,
    settings,
    /**
     * A change to how the user signs in: the password again when there is one (checked as at sign-in), else a recent
     * sign-in. Answers the page to show instead when it is not given.
     */
    confirmedByPassword: async (req: Request, user: SignedInUser): Promise<string | undefined> => {
      if (!user.hasPassword) return user.recent ? undefined : signInAgainPage(recentMinutes);
      if (await isTheirPassword(user, passwordForm.safeParse(req.body).data?.password)) return undefined;
      return settings(user, 'That password is not right.');
    },
  };
}
