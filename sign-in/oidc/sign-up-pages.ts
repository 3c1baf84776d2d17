/** The sign-up pages of a sign-in, in the layout every page shares (platform/http/html.ts). */
import { escapeHtml, page } from '../../platform/http/html';
import { formTokenField } from './account/form-token';

const errorLine = (error?: string) => (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '');

/** Where a sign-up page's buttons and links lead, all within the sign-in that sent the person there. */
export interface SignUpLinks {
  /** The sign-up form's action. */
  action: string;
  /** The e-mail step's action: a form posting an address goes on to the password page. */
  signIn: string;
  /** "Forgot your password?" for an address. */
  forgot: (email: string) => string;
}

export interface SignUpValues {
  email: string;
  firstName: string;
  lastName: string;
}

/** "I have an account": back to the e-mail step of this sign-in, with the address typed so far. */
const signInInstead = (signIn: string, email: string, label = 'Sign in instead') =>
  `<form method="post" action="${escapeHtml(signIn)}"><input type="hidden" name="email" value="${escapeHtml(email)}"><button class="secondary" type="submit">${escapeHtml(label)}</button></form>`;

/** The sign-up form: address, names, the password twice under the policy's words, and the anti-forgery token. */
export function signUpPage(
  links: SignUpLinks,
  clientName: string,
  token: string,
  rules: string,
  values: SignUpValues,
  error?: string,
): string {
  const field = (id: keyof SignUpValues, label: string, attributes: string) =>
    `<label for="${id}">${label}</label>
<input id="${id}" name="${id}" ${attributes} maxlength="256" value="${escapeHtml(values[id])}">`;
  return page(
    'Create an account',
    `<p>to continue to ${escapeHtml(clientName)}</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(links.action)}">
${formTokenField(token)}
${field('email', 'E-mail', 'type="email" autocomplete="email" required autofocus')}
${field('firstName', 'First name <span class="optional">(optional)</span>', 'autocomplete="given-name"')}
${field('lastName', 'Last name <span class="optional">(optional)</span>', 'autocomplete="family-name"')}
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="new-password" required maxlength="1024" aria-describedby="rules">
<p id="rules" class="hint">${escapeHtml(rules)}</p>
<label for="confirm">The same password again</label>
<input id="confirm" name="confirm" type="password" autocomplete="new-password" required maxlength="1024">
<button type="submit">Create the account</button>
</form>
${signInInstead(links.signIn, '', 'I already have an account')}`,
  );
}

/**
 * Auth:RequireConfirmedEmail: the one answer for a new address and a taken one (the mail says which it was), as the
 * API's 202 is. Once the address is confirmed, the person goes on with this sign-in.
 */
export function confirmByMailPage(links: SignUpLinks, email: string, minutes: number): string {
  return page(
    'Check your e-mail',
    `<p>We have sent a mail to <span class="who">${escapeHtml(email)}</span>. Open the link in it within
${Math.round(minutes / 60)} hours to confirm the address; then sign in here with your password.</p>
<p>No mail after a few minutes? Look in the spam folder. If the address already had an account, the mail says so and
how to get back in.</p>
${signInInstead(links.signIn, email, 'I have confirmed it: sign in')}`,
  );
}

/** Auth:RequireConfirmedEmail off: a taken address is said to be taken, as the API's 409 says it. */
export function addressTakenPage(links: SignUpLinks, email: string): string {
  return page(
    'You already have an account',
    `<p>An account with <span class="who">${escapeHtml(email)}</span> exists already. Sign in with it, or choose a new
password if you forgot yours.</p>
${signInInstead(links.signIn, email, 'Sign in with this address')}
<p class="links"><a href="${escapeHtml(links.forgot(email))}">Forgot your password?</a></p>`,
  );
}

/** An application refused the new account (or could not take it): nothing was created; what it said, in its words. */
export function signUpRefusedPage(links: SignUpLinks, title: string, message: string, email: string): string {
  return page(
    title,
    `${errorLine(message)}
<p>You can try again later, or ask the people who run the application.</p>
${signInInstead(links.signIn, email, 'Back to sign-in')}`,
  );
}

/** Past Auth:RegistrationRateLimit: the form is not looked at. */
export function tooManySignUpsPage(seconds: number, signInPage: string): string {
  return page(
    'Create an account',
    `${errorLine(`Too many accounts were created from this network; wait ${seconds} seconds and try again.`)}
<p class="links"><a href="${escapeHtml(signInPage)}">Back to sign-in</a></p>`,
  );
}
