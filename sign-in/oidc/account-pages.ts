import { escapeHtml, page, productName } from '../../platform/http/html';
import { formTokenField } from './account/form-token';
import { detailsSection, sessionsSection, type DetailsView, type SessionView } from './account-profile-pages';
import { onwardLink, signedInAs, TO_ACCOUNT } from './sign-in-pages';

/** The pages of a signed-in user's account: overview, password, two-step verification, recovery codes, sessions. */
const errorLine = (error?: string) => (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '');
const statusLine = (text?: string) => (text ? `<p class="notice" role="status">${escapeHtml(text)}</p>` : '');

/**
 * An application with access to the account: told to remember the user's consent ("Remember my decision"), holding a
 * refresh token (access while the user is away), or both.
 */
export interface ApplicationAccess {
  clientId: string;
  name: string;
  /** Each by its display name. */
  scopes: string[];
  remembered: boolean;
  offline: boolean;
}

export interface AccountView extends DetailsView {
  mfaOn: boolean;
  sessions: SessionView[];
  applications: ApplicationAccess[];
  passwordRules: string;
}

export function accountPage(view: AccountView, notice?: string, error?: string): string {
  const password = view.hasPassword
    ? `<h2 id="password-heading">Password</h2>
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
${detailsSection(view)}
${password}
<h2>Two-step verification</h2>
<p>${view.mfaOn ? 'On: after your password you enter a code from your authenticator app.' : 'Off.'}</p>
<p class="links"><a href="/account/mfa">${view.mfaOn ? 'Manage two-step verification and recovery codes' : 'Turn two-step verification on'}</a></p>
${sessionsSection(view.sessions, view.formToken)}
${consentsSection(view)}`,
  );
}

/** The applications with access, each removable: it loses its refresh tokens and asks again at its next sign-in. */
function consentsSection(view: AccountView): string {
  if (view.applications.length === 0) return '';
  const how = (a: ApplicationAccess) =>
    [a.offline ? 'Keeps access while you are away.' : '', a.remembered ? 'Does not ask for your consent again.' : '']
      .filter(Boolean)
      .join(' ');
  const item = (a: ApplicationAccess) => `<tr><td><strong>${escapeHtml(a.name)}</strong>
<br><span>${escapeHtml(a.scopes.join(', '))}</span><br><em>${escapeHtml(how(a))}</em></td><td><form method="post" action="/account/consents/withdraw">
${formTokenField(view.formToken)}<input type="hidden" name="client" value="${escapeHtml(a.clientId)}">
<button class="link" type="submit">Remove access</button></form></td></tr>`;
  return `<h2 id="applications-heading">Applications you allowed</h2>
<p>Remove an application's access and it can no longer use your account without you: it asks for your consent at its next sign-in.</p>
<table class="sessions" aria-labelledby="applications-heading">${view.applications.map(item).join('')}</table>`;
}

/**
 * The codes as a text file to keep, a `data:` link the browser saves (no request: the codes never travel again), and
 * a copy button: the one script of the pages, which only puts the codes on the clipboard.
 */
function keepCodes(codes: string[]): string {
  const file = `${productName()} recovery codes\n\n${codes.join('\n')}\n\nEach code signs you in once.\n`;
  const href = `data:text/plain;charset=utf-8,${encodeURIComponent(file)}`;
  return `<div class="keep">
<button class="secondary" type="button" id="copy-codes" data-codes="${escapeHtml(codes.join('\n'))}">Copy the codes</button>
<a class="button secondary" href="${escapeHtml(href)}" download="recovery-codes.txt">Download as a text file</a>
</div>
<p id="copied" role="status" class="copied" hidden>Copied. Paste them into your password manager.</p>
<script>
document.getElementById('copy-codes').addEventListener('click', function () {
  var button = this;
  navigator.clipboard.writeText(button.getAttribute('data-codes')).then(function () {
    document.getElementById('copied').hidden = false;
    button.textContent = 'Copied';
  });
});
</script>`;
}

/** The new recovery codes, shown this once. */
export function recoveryCodesPage(codes: string[], first: boolean): string {
  return page(
    first ? 'Two-step verification is on' : 'Your new recovery codes',
    `${first ? '<p>From your next sign-in on, you enter a code from your authenticator app after your password.</p>' : '<p>Your earlier recovery codes no longer work.</p>'}
<p><strong>Keep these recovery codes somewhere safe.</strong> Each one signs you in once if you lose your phone. They are shown only now.</p>
<ul class="codes" aria-label="Recovery codes">${codes.map((c) => `<li>${escapeHtml(c)}</li>`).join('')}</ul>
${keepCodes(codes)}
<p>Keep them in a password manager, or print this page.</p>
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
