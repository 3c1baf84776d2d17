/** The sign-in pages, in the layout every page shares (platform/http/html.ts). */
import { escapeHtml, page } from '../../platform/http/html';
import { formTokenField } from './account/form-token';

const errorLine = (error?: string) => (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '');

/** The first step; `signUp` is the sign-up page's address where registration is allowed (Auth:AllowRegistration). */
export function emailPage(action: string, clientName: string, error?: string, email = '', signUp?: string): string {
  return page(
    'Sign in',
    `<p>to continue to ${escapeHtml(clientName)}</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}">
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required autofocus value="${escapeHtml(email)}">
<button type="submit">Next</button>
</form>${signUp ? `\n<p class="links">New here? <a href="${escapeHtml(signUp)}">Create an account</a></p>` : ''}`,
  );
}

/** "Use another e-mail": back to the first step of this sign-in, forgetting the address and any pending code. */
const anotherEmail = (restart: string) =>
  `<form method="post" action="${escapeHtml(restart)}"><button class="secondary" type="submit">Use another e-mail</button></form>`;

export function passwordPage(action: string, email: string, restart: string, forgot: string, error?: string): string {
  return page(
    'Enter your password',
    `<p>Signing in as <span class="who">${escapeHtml(email)}</span></p>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}">
<input type="hidden" name="email" value="${escapeHtml(email)}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form>
${anotherEmail(restart)}
<p class="links"><a href="${escapeHtml(forgot)}">Forgot your password?</a></p>`,
  );
}

/**
 * The second step: an authenticator code (digits: a number pad on a phone) or, behind "Use a recovery code", one of
 * the recovery codes (letters and digits: a full keyboard). Both post the same field.
 */
export function codePage(action: string, restart: string, error?: string): string {
  return page(
    'Two-step verification',
    `<p>Enter the 6-digit code from your authenticator app.</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}">
<label for="code">Code</label>
<input id="code" name="code" inputmode="numeric" pattern="[0-9 ]*" autocomplete="one-time-code" required autofocus maxlength="64">
<button type="submit">Verify</button>
</form>
<details class="alt"><summary>Use a recovery code</summary>
<form method="post" action="${escapeHtml(action)}">
<label for="recovery-code">Recovery code</label>
<input id="recovery-code" name="code" inputmode="text" autocomplete="off" autocapitalize="off" spellcheck="false" required maxlength="64">
<button class="secondary" type="submit">Verify the recovery code</button>
</form>
</details>
${anotherEmail(restart)}`,
  );
}

/** A scope as the consent page names it: its DisplayName (else its name) and its Description, as migrated. */
export interface ScopeOnConsent {
  name: string;
  displayName: string | null;
  description: string | null;
}

export interface ConsentView {
  allow: string;
  deny: string;
  /** Where "not you?" posts: it signs this browser out and starts the sign-in again. */
  switchAccount: string;
  clientName: string;
  email: string;
  scopes: ScopeOnConsent[];
  /** The client's AllowRememberConsent: "Remember my decision" is offered. */
  offerRemember: boolean;
}

/** "Signed in as … — not you?": the button posts `action` (a sign-out; never a link another site could make). */
export const signedInAs = (email: string, action: string, extra = '') =>
  `<form class="whoami" method="post" action="${escapeHtml(action)}">${extra}<span>Signed in as <span class="who">${escapeHtml(email)}</span></span>
<button class="link" type="submit">Not you?</button></form>`;

/**
 * Consent, as Duende IdentityServer's consent page has it: every scope asked for, by its display name and
 * description; "Remember my decision" when the client allows it (checked, as in Duende's quickstart UI).
 */
export function consentPage(view: ConsentView): string {
  const item = (s: ScopeOnConsent) =>
    `<li><strong>${escapeHtml(s.displayName || s.name)}</strong>${s.description ? `<br><span>${escapeHtml(s.description)}</span>` : ''}</li>`;
  const remember = view.offerRemember
    ? '<label class="check"><input type="checkbox" name="remember" value="yes" checked> Remember my decision</label>'
    : '';
  return page(
    'Allow access?',
    `${signedInAs(view.email, view.switchAccount)}
<p><span class="who">${escapeHtml(view.clientName)}</span> asks for:</p>
<ul class="scopes">${view.scopes.map(item).join('')}</ul>
<form method="post" action="${escapeHtml(view.allow)}">${remember}<button type="submit">Allow</button></form>
<form method="post" action="${escapeHtml(view.deny)}"><button class="secondary" type="submit">Deny</button></form>`,
  );
}

/** Where a person goes on from a page that ends a path: back to an application, or to their account. */
export interface Onward {
  href: string;
  label: string;
}

/** The way on when no application is known: the account page, which signs the user in first when needed. */
export const TO_ACCOUNT: Onward = { href: '/account', label: 'Go to your account' };

export const onwardLink = (onward: Onward) =>
  `<p class="links"><a class="onward" href="${escapeHtml(onward.href)}">${escapeHtml(onward.label)}</a></p>`;

/**
 * The one error page for end users: a plain message, the reference that the log line with the detail carries
 * (error-page.ts, errorReference), and the way on.
 */
export function renderErrorPage(
  message: string,
  {
    title = 'Something went wrong',
    reference,
    onward = TO_ACCOUNT,
  }: { title?: string; reference?: string; onward?: Onward } = {},
): string {
  const ref = reference
    ? `<p class="reference">If you contact support, give this reference: <span class="key">${escapeHtml(reference)}</span></p>`
    : '';
  return page(title, `${errorLine(message)}${ref}${onwardLink(onward)}`);
}

/** Enrolment of an authenticator app: the QR code, the key as text for typing in, and one code to confirm. */
export function mfaEnrolPage(
  action: string,
  qrDataUrl: string,
  key: string,
  pending: string,
  token: string,
  error?: string,
): string {
  return page(
    'Set up two-step verification',
    `<p>Scan this code with your authenticator app, or type the key into it. Then enter the 6-digit code it shows.</p>
${errorLine(error)}
<img class="qr" src="${escapeHtml(qrDataUrl)}" alt="QR code of the authenticator key">
<p class="key">${escapeHtml(key.replace(/(.{4})/g, '$1 ').trim())}</p>
<form method="post" action="${escapeHtml(action)}">
<input type="hidden" name="pending" value="${escapeHtml(pending)}">
${formTokenField(token)}
<label for="code">Code</label>
<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" required autofocus maxlength="6">
<button type="submit">Turn on</button>
</form>`,
  );
}

/** Before a change to how the user signs in, after a sign-in that is not recent: the password again. */
export function reauthPage(action: string, email: string, token: string, error?: string): string {
  return page(
    'Confirm it is you',
    `<p>Enter the password of <span class="who">${escapeHtml(email)}</span> to change how you sign in.</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}">
${formTokenField(token)}
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Continue</button>
</form>`,
  );
}

/** The same for a user without a password here (signed in through an organization's provider): sign in again. */
export function signInAgainPage(minutes: number): string {
  return page(
    'Sign in again first',
    `<p>To change how you sign in, your sign-in must be recent. Sign out, sign in again through one of your
applications, and come back to this page within ${minutes} minute${minutes === 1 ? '' : 's'}.</p>`,
  );
}

/**
 * The sign-out confirmation. `form` is oidc-provider's own form (id `op.logoutForm`, with its CSRF token); the buttons
 * submit it, "yes" with `logout=yes`.
 */
export function signOutPage(form: string): string {
  return page(
    'Sign out?',
    `<p>Do you want to sign out of every application that uses this sign-in?</p>
${form}
<button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
<button class="secondary" type="submit" form="op.logoutForm">No, stay signed in</button>`,
  );
}

/**
 * The sign-out a client asked for with a valid `id_token_hint` of the signed-in user: no question, as IdentityServer
 * asks none then (provider-configuration/features.ts). The page submits oidc-provider's form (its CSRF token) itself,
 * with `logout=yes`, by the one script of the pages; without script the button does it.
 */
export function signingOutPage(form: string): string {
  return page(
    'Signing out',
    `<p>Signing you out of every application that uses this sign-in…</p>
${form}
<button id="sign-out" autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Continue</button>
<script>document.getElementById('sign-out').click();</script>`,
  );
}

export function signedOutPage(): string {
  return page('Signed out', `<p>You are signed out. You can close this window.</p>${onwardLink(TO_ACCOUNT)}`);
}

/** After an IdP-initiated sign-in, which has no application to return to. */
export function accountReadyPage(providerName: string): string {
  return page(
    'Your account is ready',
    `<p>You signed in through ${escapeHtml(providerName)}. Open the application you want to use and sign in with your
work e-mail address: you will go through ${escapeHtml(providerName)} again, without a password here.</p>
${onwardLink(TO_ACCOUNT)}`,
  );
}

/** oidc-provider's device forms carry an anti-forgery token; the pages are ours, in the layout every page shares. */
const xsrfOf = (form: string) => /name="xsrf" value="([^"]*)"/.exec(form)?.[1] ?? '';
const actionOf = (form: string) => /action="([^"]*)"/.exec(form)?.[1] ?? '';

/** The device flow's first page: the code the device shows (RFC 8628). */
export function deviceCodePage(form: string, error?: string): string {
  return page(
    'Connect a device',
    `<p>Enter the code your device shows.</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(actionOf(form))}">
<input type="hidden" name="xsrf" value="${escapeHtml(xsrfOf(form))}">
<label for="user_code">Code</label>
<input id="user_code" name="user_code" autocomplete="off" autocapitalize="characters" required autofocus maxlength="32">
<button type="submit">Continue</button>
</form>`,
  );
}

/** The device flow's confirmation: which application, and the code again to compare with the device's. */
export function deviceConfirmPage(form: string, clientName: string, userCode: string, scopes: string[]): string {
  const fields = `<input type="hidden" name="xsrf" value="${escapeHtml(xsrfOf(form))}">
<input type="hidden" name="user_code" value="${escapeHtml(userCode)}">`;
  return page(
    'Connect this device?',
    `<p><span class="who">${escapeHtml(clientName)}</span> on a device asks to use your account for:</p>
<ul>${scopes.map((s) => `<li><strong>${escapeHtml(s)}</strong></li>`).join('')}</ul>
<p>Continue only if the device shows this code:</p>
<p class="key">${escapeHtml(userCode)}</p>
<form method="post" action="${escapeHtml(actionOf(form))}">${fields}
<input type="hidden" name="confirm" value="yes"><button type="submit">Continue</button></form>
<form method="post" action="${escapeHtml(actionOf(form))}">${fields}
<input type="hidden" name="abort" value="yes"><button class="secondary" type="submit">Cancel</button></form>`,
  );
}

/** Past Auth:UserCodeRateLimit: the code is not looked up. */
export function deviceCodeLimitPage(seconds: number): string {
  return page(
    'Connect a device',
    `${errorLine(`Too many codes entered from this browser or network; wait ${seconds} seconds and try again.`)}`,
  );
}

/** A code posted without the page it was typed into (no session, or one that expired or was used). */
export function deviceStartAgainPage(): string {
  return page(
    'Connect a device',
    `${errorLine('This page has expired.')}<p>Open the address your device shows again and enter its code there.</p>`,
  );
}

export function deviceDonePage(clientName: string): string {
  return page(
    'Device connected',
    `<p>${escapeHtml(clientName)} is signed in. Go back to your device; you can close this page.</p>`,
  );
}
