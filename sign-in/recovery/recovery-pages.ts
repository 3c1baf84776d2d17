import { escapeHtml, page } from '../../platform/http/html';
import { onwardLink, TO_ACCOUNT, type Onward } from '../oidc/sign-in-pages';

/** The pages of account recovery, in the layout every sign-in page shares. */
const errorLine = (error?: string) => (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '');

/** A sign-in to go back to: the interaction "Forgot your password?" was opened from. */
export const backToSignIn = (uid: string): Onward => ({
  href: `/interaction/${encodeURIComponent(uid)}`,
  label: 'Back to sign-in',
});

export function forgotPasswordPage(action: string, email = '', error?: string, returnUid?: string): string {
  return page(
    'Forgot your password?',
    `<p>Enter the e-mail address of your account. We will send you a link to choose a new password.</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}">
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="email" required autofocus maxlength="256" value="${escapeHtml(email)}">
${returnUid ? `<input type="hidden" name="return" value="${escapeHtml(returnUid)}">` : ''}
<button type="submit">Send the link</button>
</form>
${onwardLink(returnUid ? backToSignIn(returnUid) : TO_ACCOUNT)}`,
  );
}

/** The one answer whether or not the account exists. */
export function resetLinkSentPage(email: string, minutes: number, onward: Onward = TO_ACCOUNT): string {
  return page(
    'Check your e-mail',
    `<p>If <span class="who">${escapeHtml(email)}</span> belongs to an account, we have sent it a link to choose a new
password. The link works once, for ${minutes} minute${minutes === 1 ? '' : 's'}.</p>
<p>No mail after a few minutes? Look in the spam folder, or check the address and ask again.</p>
${onwardLink(onward)}`,
  );
}

export function resetPasswordPage(action: string, token: string, rules: string, error?: string): string {
  return page(
    'Choose a new password',
    `${errorLine(error)}
<p>${escapeHtml(rules)}</p>
<form method="post" action="${escapeHtml(action)}">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" required autofocus maxlength="1024">
<label for="confirm">The same password again</label>
<input id="confirm" name="confirm" type="password" autocomplete="new-password" required maxlength="1024">
<button type="submit">Set the password</button>
</form>`,
  );
}

export function resetDonePage(): string {
  return page(
    'Your password is changed',
    `<p>Sign in with your new password. You were signed out everywhere: every application asks you to sign in again.</p>
${onwardLink({ href: '/account', label: 'Sign in with your new password' })}`,
  );
}

export function linkExpiredPage(forgotUrl: string): string {
  return page(
    'This link no longer works',
    `<p>It was used already, it has expired, or the password was changed since it was sent.</p>
<p class="links"><a href="${escapeHtml(forgotUrl)}">Ask for a new link</a> <a href="/account">Go to your account</a></p>`,
  );
}

export function emailConfirmedPage(): string {
  return page(
    'Your e-mail address is confirmed',
    `<p>You can sign in now: go back to the application, or to your account.</p>${onwardLink({ href: '/account', label: 'Sign in to your account' })}`,
  );
}

export function confirmationExpiredPage(): string {
  return page(
    'This link no longer works',
    `<p>It was used already or has expired. Sign in, and the sign-in offers to send a new confirmation mail.</p>${onwardLink({ href: '/account', label: 'Sign in' })}`,
  );
}

/** Signing in with an address not yet confirmed, while Auth:RequireConfirmedEmail is on. */
export function unconfirmedEmailPage(action: string, email: string, sent = false): string {
  return page(
    'Confirm your e-mail address first',
    `<p>Before you can sign in, confirm that <span class="who">${escapeHtml(email)}</span> is yours with the link we
sent to it.</p>
${sent ? '<p role="status">We have sent the mail again. The newest link works; earlier ones stop working once one is used.</p>' : ''}
<form method="post" action="${escapeHtml(action)}"><button class="secondary" type="submit">Send the mail again</button></form>`,
  );
}
