/** The account page's sections for who the user is and where they are signed in, and the pages of an address change. */
import { escapeHtml, page } from '../../platform/http/html';
import { formTokenField } from './account/form-token';

/** A sign-in as the account page lists it. */
export interface SessionView {
  id: string;
  signedInAt?: Date;
  /** A short description of the browser and system ("Firefox on Windows"). */
  device: string;
  clientAddress: string | null;
  /** The display names of the applications it signed in to (their ClientName, else their id). */
  apps: string[];
  current: boolean;
}

export interface DetailsView {
  email: string;
  firstName: string | null;
  lastName: string | null;
  hasPassword: boolean;
  formToken: string;
}

const when = (at?: Date) => (at ? at.toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : 'at an unknown time');

/** Name and e-mail: the name changes at once, a new address after the link mailed to it is opened. */
export function detailsSection(view: DetailsView): string {
  const password = view.hasPassword
    ? `<label for="email-password">Your password</label>
<input id="email-password" name="password" type="password" autocomplete="current-password" required maxlength="1024">`
    : '';
  return `<h2>Your details</h2>
<form method="post" action="/account/names">
${formTokenField(view.formToken)}
<label for="firstName">First name</label>
<input id="firstName" name="firstName" autocomplete="given-name" maxlength="256" value="${escapeHtml(view.firstName ?? '')}">
<label for="lastName">Last name</label>
<input id="lastName" name="lastName" autocomplete="family-name" maxlength="256" value="${escapeHtml(view.lastName ?? '')}">
<button type="submit">Save the name</button>
</form>
<form method="post" action="/account/email">
${formTokenField(view.formToken)}
<p class="current">E-mail: <span class="who">${escapeHtml(view.email)}</span></p>
<label for="new-email">New e-mail address</label>
<input id="new-email" name="email" type="email" autocomplete="email" required maxlength="256">
${password}
<p class="hint">We send a link to the new address; it changes when you open the link, and we tell the old address.</p>
<button class="secondary" type="submit">Change the e-mail address</button>
</form>`;
}

function sessionRow(s: SessionView, token: string): string {
  const where = [s.device, s.clientAddress].filter(Boolean).map((part) => escapeHtml(part!));
  const app = (name: string) => `<span class="client" title="${escapeHtml(name)}">${escapeHtml(name)}</span>`;
  const apps = s.apps.length ? s.apps.map(app).join(', ') : 'no application yet';
  const end = s.current
    ? '<p class="this-one">This browser</p>'
    : `<form method="post" action="/account/sessions/end-one">${formTokenField(token)}<input type="hidden" name="session" value="${escapeHtml(s.id)}"><button class="secondary small" type="submit">End this session</button></form>`;
  return `<li class="session">
<p class="device"><strong>${where.join(' · ')}</strong></p>
<p>Signed in ${escapeHtml(when(s.signedInAt))}</p>
<p>Applications: ${apps}</p>
${end}
</li>`;
}

/** Each sign-in with when, from where and for which applications; any other one can be ended alone. */
export function sessionsSection(sessions: SessionView[], token: string): string {
  const list = sessions.length
    ? `<ul class="session-list">${sessions.map((s) => sessionRow(s, token)).join('')}</ul>`
    : '<p>No other sign-ins.</p>';
  return `<h2>Where you are signed in</h2>
${list}
<form method="post" action="/account/sessions/end">${formTokenField(token)}<button class="secondary" type="submit">Sign out everywhere</button></form>`;
}

const backToAccount = '<p class="links"><a href="/account">Back to your account</a></p>';

/** The answer for a free address and a taken one alike (the taken one's owner is mailed instead). */
export function emailChangeSentPage(newEmail: string, minutes: number): string {
  return page(
    'Check your new mailbox',
    `<p role="status">We have sent a link to <span class="who">${escapeHtml(newEmail)}</span>. Your address changes when
you open it (within ${Math.round(minutes / 60)} hours); until then you keep signing in with your current address.</p>
${backToAccount}`,
  );
}

export function emailChangedPage(email: string): string {
  return page(
    'Your e-mail address is changed',
    `<p role="status">You sign in with <span class="who">${escapeHtml(email)}</span> from now on. We told your old
address.</p>
${backToAccount}`,
  );
}

export function emailChangeExpiredPage(): string {
  return page(
    'This link no longer works',
    `<p>It was used already or is too old, or your address or password changed since it was sent. Ask for the change
again on your account page.</p>
${backToAccount}`,
  );
}

export function emailChangeTakenPage(): string {
  return page(
    'This address is used by another account',
    `<p>Nothing changed: you keep signing in with your current address.</p>
${backToAccount}`,
  );
}
