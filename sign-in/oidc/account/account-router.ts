import express, { Router } from 'express';
import type { AccountDependencies } from '../account-session';
import { signInErrorPage } from '../error-page';
import { ACCOUNT_PAGE, MFA_PAGE, createAccountContext } from './account-context';
import { postMfaOff, postNewRecoveryCodes } from './mfa-changes';
import { postEnrolment, showEnrolment } from './mfa-enrolment';
import { ACCOUNT_CALLBACK } from './account-sign-in';
import {
  accountSignedIn,
  postPasswordChange,
  postSignOutEverywhere,
  postSwitchAccount,
  postWithdrawConsent,
  showAccount,
} from './overview';
import { CONFIRM_EMAIL_CHANGE_PATH, confirmEmailChange, postEmailChange, postNames } from './profile';
import { postEndSession } from './sessions';

/**
 * `/account` and `/account/mfa`: a signed-in user (the provider's session cookie) changes the name, the e-mail address
 * (confirmed by a link to the new one) and the password, ends one sign-in or every one, withdraws a remembered
 * consent, and turns two-step verification on or off. Every form carries the session's anti-forgery token
 * (platform/security/form-token.ts): the session cookie is SameSite=Lax, which a form posted from another site's page
 * in the same site (a sibling subdomain) or an older browser does not stop.
 */
export function accountRouter(deps: AccountDependencies): Router {
  const ctx = createAccountContext(deps);
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 5 });
  router.get(MFA_PAGE, showEnrolment(ctx));
  router.post(MFA_PAGE, form, postEnrolment(ctx));
  router.post(`${MFA_PAGE}/recovery-codes`, form, postNewRecoveryCodes(ctx));
  router.post(`${MFA_PAGE}/off`, form, postMfaOff(ctx));
  router.get(ACCOUNT_PAGE, showAccount(ctx));
  router.post(`${ACCOUNT_PAGE}/password`, form, postPasswordChange(ctx));
  router.post(`${ACCOUNT_PAGE}/sessions/end`, form, postSignOutEverywhere(ctx));
  router.post(`${ACCOUNT_PAGE}/sessions/end-one`, form, postEndSession(ctx));
  router.post(`${ACCOUNT_PAGE}/names`, form, postNames(ctx));
  router.post(`${ACCOUNT_PAGE}/email`, form, postEmailChange(ctx));
  router.post(`${ACCOUNT_PAGE}/switch`, form, postSwitchAccount(ctx));
  router.post(`${ACCOUNT_PAGE}/consents/withdraw`, form, postWithdrawConsent(ctx));
  router.get(ACCOUNT_CALLBACK, accountSignedIn(ctx));
  // Opened from the mail, in any browser: the link's token is the proof, not a session.
  router.get(CONFIRM_EMAIL_CHANGE_PATH, confirmEmailChange(ctx));
  router.use(signInErrorPage);
  return router;
}
