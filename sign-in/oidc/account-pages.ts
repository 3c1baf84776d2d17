import { escapeHtml, page } from '../../platform/http/html';
import { FORM_TOKEN_FIELD } from './account/form-token';

/** The pages of a signed-in user's account: overview, password, two-step sign-in, recovery codes, sessions. */
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
  passwordRules: string;
  formToken: string;
}

const when = (at?: Date) => (at ? at.toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : 'unknown time');

export function accountPage(view: AccountView, notice?: string, error?: string): string {
  const sessions = view.sessions.length
    ? `<table class="sessions">${view.sessions
        .map(
          (s) =>
            `<tr><td>Signed in ${escapeHtml(when(s.signedInAt))}${s.current ? ' (this browser)' : ''}</td><td>${escapeHtml(
              s.clientIds.join(', ') || 'no application yet',
            )}</td></tr>`,
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
    `<p>Signed in as <span class="who">${escapeHtml(view.email)}</span></p>
${statusLine(notice)}${errorLine(error)}
${password}
<h2>Two-step sign-in</h2>
<p>${view.mfaOn ? 'On: after your password you enter a code from your authenticator app.' : 'Off.'}</p>
<p class="links"><a href="/account/mfa">${view.mfaOn ? 'Manage two-step sign-in and recovery codes' : 'Turn two-step sign-in on'}</a></p>
<h2>Where you are signed in</h2>
${sessions}
<form method="post" action="/account/sessions/end">${formTokenField(view.formToken)}<button class="secondary" type="submit">Sign out everywhere</button></form>`,
  );
}

/** The new recovery codes, shown this once. */
export function recoveryCodesPage(codes: string[], first: boolean): string {
  return page(
    first ? 'Two-step sign-in is on' : 'Your new recovery codes',
    `${first ? '<p>From your next sign-in on, you enter a code from your authenticator app after your password.</p>' : '<p>Your earlier recovery codes no longer work.</p>'}
<p><strong>Keep these recovery codes somewhere safe.</strong> Each one signs you in once if you lose your phone. They are shown only now.</p>
<ul class="codes" aria-label="Recovery codes">${codes.map((c) => `<li>${escapeHtml(c)}</li>`).join('')}</ul>
<p>Copy them into a password manager or print this page.</p>
<p class="links"><a href="/account">Back to your account</a></p>`,
  );
}

/** Two-step sign-in is on: new recovery codes or off, each after the password. */
export function mfaSettingsPage(codesLeft: number, hasPassword: boolean, token: string, error?: string): string {
  const passwordField = (id: string) =>
    hasPassword
      ? `<label for="${id}">Password</label><input id="${id}" name="password" type="password" autocomplete="current-password" required maxlength="1024">`
      : '';
  return page(
    'Two-step sign-in',
    `<p>Two-step sign-in is on. You have ${codesLeft} unused recovery code${codesLeft === 1 ? '' : 's'}.</p>
${errorLine(error)}
<form method="post" action="/account/mfa/recovery-codes">
${formTokenField(token)}
${passwordField('password-codes')}
<button type="submit">Make new recovery codes</button>
</form>
<form method="post" action="/account/mfa/off">
${formTokenField(token)}
${passwordField('password-off')}
<button class="secondary" type="submit">Turn two-step sign-in off</button>
</form>
<p class="links"><a href="/account">Back to your account</a></p>`,
  );
}

export function mfaOffPage(): string {
  return page(
    'Two-step sign-in is off',
    '<p>You sign in with your password only. Your authenticator and recovery codes were removed.</p><p class="links"><a href="/account">Back to your account</a></p>',
  );
}

export function signedOutEverywherePage(sessions: number): string {
  return page(
    'Signed out everywhere',
    `<p>${sessions} sign-in${sessions === 1 ? '' : 's'} ended, this one too. Every application asks you to sign in again.</p>`,
  );
}

/** A form posted without this session's anti-forgery token: another site's, or a page older than the session. */
export function formExpiredPage(): string {
  return page(
    'This form has expired',
    `<p>The form did not carry this sign-in's ${FORM_TOKEN_FIELD}, so nothing was changed. Open <a href="/account">your account</a> again and send the form from there.</p>`,
  );
}
