import { escapeHtml, page } from '../../platform/http/html';
import type { RememberedConsent } from '../store/consents';
import { FORM_TOKEN_FIELD } from './account/form-token';
import { onwardLink, signedInAs, TO_ACCOUNT } from './sign-in-pages';

/** The pages of a signed-in user's account: overview, password, two-step verification, recovery codes, sessions. */
const errorLine = (error?: string) => (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '');
const statusLine = (text?: string) => (text ? `<p role="status"><strong>${escapeHtml(text)}</strong></p>` : '');

/** The session's anti-forgery token, in every form of the account pages (platform/security/form-token.ts). */
export const formTokenField = (token: string) =>
  `<input type="hidden" name="${FORM_TOKEN_FIELD}" value="${escapeHtml(token)}">`;

export interface AccountView {
  email: string;
  hasPassword: boolean;
  mfaOn: boolean;
  sessions: Array<{ signedInAt?: Date; clientIds: string[]; current: boolean }>;
  /** The applications the user told to remember their consent ("Remember my decision"). */
  consents: RememberedConsent[];
  passwordRules: string;
  formToken: string;
}

const when = (at?: Date) => (at ? at.toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : 'unknown time');

export function accountPage(view: AccountView, notice?: string, error?: string): string {
  const sessions = view.sessions.length
    ? `<table class="sessions">${view.sessions
        .map(
          (s) =>
            `<tr><td>Signed in ${escapeHtml(when(s.signedInAt))}${s.current ? ' (this browser)' : ''}</td><td>${
              s.clientIds
                .map((id) => `<span class="client" title="${escapeHtml(id)}">${escapeHtml(id)}</span>`)
                .join(', ') || 'no application yet'
            }</td></tr>`,
        )
        .join('')}</table>`
    : '<p>No other sign-ins.</p>';
  const password = view.hasPassword
    ? `<h2>Password</h2>
<form method="post" action="/account/password">
${formTokenField(view.formToken)}
<label for="current">Current password</label>
<input id="current" name="current" type="password" autocomplete="current-password" required maxlength="1024">
<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" required maxlength="1024">
<label for="confirm">The new password again</label>
<input id="confirm" name="confirm" type="password" autocomplete="new-password" required maxlength="1024">
<p>${escapeHtml(view.passwordRules)}</p>
<button type="submit">Change the password</button>
</form>`
    : "<h2>Password</h2><p>You sign in through your organization's identity provider; there is no password here.</p>";
  return page(
    'Your account',
    `${signedInAs(view.email, '/account/switch', formTokenField(view.formToken))}
${statusLine(notice)}${errorLine(error)}
${password}
<h2>Two-step verification</h2>
<p>${view.mfaOn ? 'On: after your password you enter a code from your authenticator app.' : 'Off.'}</p>
<p class="links"><a href="/account/mfa">${view.mfaOn ? 'Manage two-step verification and recovery codes' : 'Turn two-step verification on'}</a></p>
<h2>Where you are signed in</h2>
${sessions}
<form method="post" action="/account/sessions/end">${formTokenField(view.formToken)}<button class="secondary" type="submit">Sign out everywhere</button></form>
${consentsSection(view)}`,
  );
}

/** The remembered consents, each withdrawable: the application asks again at its next sign-in. */
function consentsSection(view: AccountView): string {
  if (view.consents.length === 0) return '';
  const item = (c: RememberedConsent) => `<tr><td><strong>${escapeHtml(c.clientName ?? c.clientId)}</strong>
<br><span>${escapeHtml(c.scopes.join(', '))}</span></td><td><form method="post" action="/account/consents/withdraw">
${formTokenField(view.formToken)}<input type="hidden" name="client" value="${escapeHtml(c.clientId)}">
<button class="link" type="submit">Withdraw</button></form></td></tr>`;
  return `<h2>Applications you allowed</h2>
<p>These applications do not ask for your consent again. Withdraw it and the application asks at its next sign-in.</p>
<table class="sessions">${view.consents.map(item).join('')}</table>`;
}

/** The new recovery codes, shown this once. */
export function recoveryCodesPage(codes: string[], first: boolean): string {
  return page(
    first ? 'Two-step verification is on' : 'Your new recovery codes',
    `${first ? '<p>From your next sign-in on, you enter a code from your authenticator app after your password.</p>' : '<p>Your earlier recovery codes no longer work.</p>'}
<p><strong>Keep these recovery codes somewhere safe.</strong> Each one signs you in once if you lose your phone. They are shown only now.</p>
<ul class="codes" aria-label="Recovery codes">${codes.map((c) => `<li>${escapeHtml(c)}</li>`).join('')}</ul>
<p>Copy them into a password manager or print this page.</p>
<p class="links"><a href="/account">Back to your account</a></p>`,
  );
}

/**
 * Two-step verification is on: new recovery codes, or off. One form with one password field (when the user has a
 * password) and a button for each change, each posting to its own address (`formaction`).
 */
export function mfaSettingsPage(codesLeft: number, hasPassword: boolean, token: string, error?: string): string {
  const passwordField = hasPassword
    ? `<label for="password">Your password, to confirm either change</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024">`
    : '';
  return page(
    'Two-step verification',
    `<p>Two-step verification is on. You have ${codesLeft} unused recovery code${codesLeft === 1 ? '' : 's'}.</p>
${errorLine(error)}
<form method="post" action="/account/mfa/recovery-codes">
${formTokenField(token)}
${passwordField}
<button type="submit">Make new recovery codes</button>
<button class="secondary" type="submit" formaction="/account/mfa/off">Turn two-step verification off</button>
</form>
<p class="links"><a href="/account">Back to your account</a></p>`,
  );
}

export function mfaOffPage(): string {
  return page(
    'Two-step verification is off',
    '<p>You sign in with your password only. Your authenticator and recovery codes were removed.</p><p class="links"><a href="/account">Back to your account</a></p>',
  );
}

export function signedOutEverywherePage(sessions: number): string {
  return page(
    'Signed out everywhere',
    `<p>${sessions} sign-in${sessions === 1 ? '' : 's'} ended, this one too. Every application asks you to sign in again.</p>
${onwardLink({ href: '/account', label: 'Sign in again' })}`,
  );
}

/** A form posted without this session's anti-forgery token: another site's, or a page older than the session. */
export function formExpiredPage(): string {
  return page(
    'This form has expired',
    `<p>Nothing was changed: the form was older than this sign-in, or came from another site. Open your account again and send the form from there.</p>
${onwardLink(TO_ACCOUNT)}`,
  );
}

/** A form posted without a session (signed out meanwhile): the way in is the account page itself. */
export function notSignedInPage(): string {
  return page(
    'Sign in first',
    `<p>You are not signed in (any more), so nothing was changed.</p>${onwardLink({ href: '/account', label: 'Sign in' })}`,
  );
}
