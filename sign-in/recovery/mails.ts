import { escapeHtml } from '../../platform/http/html';
import type { Mail } from '../../platform/email/mailer';

/**
 * The mails account recovery sends, each as plain text and as HTML. The HTML is one column that fits a phone (no
 * table layout, inline styles only: mail programs drop style sheets) with the link as a button and again as text.
 */
function htmlMail(product: string, heading: string, paragraphs: string[], link?: { url: string; label: string }) {
  const p = (text: string) =>
    `<p style="margin:0 0 16px;font-size:16px;line-height:1.5;color:#374151;overflow-wrap:anywhere;word-break:break-word">${escapeHtml(text)}</p>`;
  const button = link
    ? `<p style="margin:24px 0"><a href="${escapeHtml(link.url)}" style="display:inline-block;padding:12px 20px;background:#2563eb;color:#ffffff;border-radius:8px;font-weight:600;text-decoration:none;font-size:16px">${escapeHtml(link.label)}</a></p>
<p style="margin:0 0 16px;font-size:13px;line-height:1.5;color:#6b7280;word-break:break-all">Or open this address: ${escapeHtml(link.url)}</p>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(heading)}</title></head>
<body style="margin:0;padding:0;background:#f3f4f6;font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif">
<div style="max-width:480px;margin:0 auto;padding:24px 16px">
<div style="background:#ffffff;border-radius:12px;padding:24px 20px">
<p style="margin:0 0 8px;font-size:14px;color:#6b7280">${escapeHtml(product)}</p>
<h1 style="margin:0 0 16px;font-size:22px;color:#111827">${escapeHtml(heading)}</h1>
${paragraphs.map(p).join('\n')}
${button}
</div></div></body></html>`;
}

const textMail = (paragraphs: string[], link?: string) => [...paragraphs, ...(link ? [link] : [])].join('\n\n') + '\n';

/** The reset link: one link, to Api:PublicUrl, valid for `minutes`. */
export function passwordResetMail(product: string, to: string, url: string, minutes: number): Mail {
  const lead = [
    `Someone asked to reset the password of your ${product} account (${to}). If it was you, choose a new password with this link. It works once, for ${minutes} minutes.`,
  ];
  const tail = ['If you did not ask for this, ignore this mail: your password stays as it is.'];
  return {
    kind: 'password-reset',
    to,
    subject: `Reset your ${product} password`,
    text: textMail([...lead, url, ...tail]),
    html: htmlMail(product, 'Reset your password', [...lead, ...tail], { url, label: 'Choose a new password' }),
  };
}

/** For an account that signs in only through its organization: there is no password to reset. */
export function noPasswordMail(product: string, to: string): Mail {
  const lines = [
    `Someone asked to reset the password of your ${product} account (${to}). Your account has no password here: you sign in with your company's identity provider.`,
    "Enter your e-mail address on the sign-in page and you are sent to your company to sign in. If you cannot sign in there, ask your company's IT support.",
    'If you did not ask for this, ignore this mail.',
  ];
  return {
    kind: 'password-reset-no-password',
    to,
    subject: `Signing in to ${product}`,
    text: textMail(lines),
    html: htmlMail(product, 'Sign in with your company', lines),
  };
}

/** The confirmation link of a new address. */
export function confirmationMail(product: string, to: string, url: string): Mail {
  const lead = [`Confirm that ${to} is your e-mail address for ${product}.`];
  const tail = ['If you did not create an account, ignore this mail.'];
  return {
    kind: 'email-confirmation',
    to,
    subject: `Confirm your e-mail address for ${product}`,
    text: textMail([...lead, url, ...tail]),
    html: htmlMail(product, 'Confirm your e-mail address', [...lead, ...tail], { url, label: 'Confirm my address' }),
  };
}

/**
 * To the owner of an address someone registered again (Auth:RequireConfirmedEmail): the registration answered as for a
 * new address, so only the owner learns that the account exists, and how to get back in.
 */
export function registrationAttemptMail(product: string, to: string, forgotUrl: string, hasPassword: boolean): Mail {
  const lead = [
    `Someone tried to create a ${product} account with ${to}. You already have an account with this address, so nothing was created.`,
    hasPassword
      ? 'If it was you, sign in with your password; if you forgot it, choose a new one with this link.'
      : "If it was you, sign in with your company's identity provider: enter your e-mail address on the sign-in page.",
  ];
  const tail = ['If it was not you, ignore this mail: your account stays as it is.'];
  return {
    kind: 'registration-attempt',
    to,
    subject: `Your ${product} account`,
    text: textMail(hasPassword ? [...lead, forgotUrl, ...tail] : [...lead, ...tail]),
    html: htmlMail(
      product,
      'You already have an account',
      [...lead, ...tail],
      hasPassword ? { url: forgotUrl, label: 'Choose a new password' } : undefined,
    ),
  };
}

/** A change to how the account signs in, each with what the mail says happened. */
export type AccountChange =
  'password-changed' | 'mfa-enrolled' | 'mfa-removed' | 'recovery-codes-regenerated' | 'email-changed';

const CHANGE_WORDS: Record<AccountChange, { subject: string; done: string }> = {
  'password-changed': { subject: 'Your password was changed', done: 'The password of your account was changed' },
  'mfa-enrolled': {
    subject: 'Two-step verification is on',
    done: 'Two-step verification was turned on for your account',
  },
  'mfa-removed': {
    subject: 'Two-step verification is off',
    done: 'Two-step verification was turned off for your account',
  },
  'recovery-codes-regenerated': {
    subject: 'New recovery codes were made',
    done: 'New recovery codes were made for your account; the earlier ones no longer work',
  },
  'email-changed': {
    subject: 'Your e-mail address was changed',
    done: 'Your account signs in with another e-mail address from now on; this address no longer belongs to it',
  },
};

/**
 * The notice of a change made on the account page, as ASP.NET Identity's templates and most providers send one: the
 * owner learns of a change they did not make. No link: a mail that asks to click is what phishing looks like.
 */
export function accountChangedMail(product: string, to: string, change: AccountChange, signedOut: boolean): Mail {
  const { subject, done } = CHANGE_WORDS[change];
  const lines = [
    `${done} (${product}, ${to}).${signedOut ? ' Every other device and application was signed out.' : ''}`,
    `If it was not you, reset your password with "Forgot your password?" on the ${product} sign-in page now, and tell your IT support.`,
  ];
  return {
    kind: 'account-changed',
    to,
    subject: `${subject} (${product})`,
    text: textMail(lines),
    html: htmlMail(product, subject, lines),
  };
}

/** The link that confirms a new address of an existing account, mailed to that address (the account page). */
export function emailChangeMail(product: string, to: string, url: string, minutes: number): Mail {
  const lead = [
    `Someone asked to make ${to} the e-mail address of their ${product} account. If it was you, confirm it with this link. It works once, for ${Math.round(minutes / 60)} hours.`,
  ];
  const tail = ['If it was not you, ignore this mail: nothing changes.'];
  return {
    kind: 'email-change',
    to,
    subject: `Confirm your new e-mail address for ${product}`,
    text: textMail([...lead, url, ...tail]),
    html: htmlMail(product, 'Confirm your new e-mail address', [...lead, ...tail], {
      url,
      label: 'Confirm the address',
    }),
  };
}

/**
 * To the owner of an address another account asked to move to: the page answered as for a free address, so only the
 * owner learns that the address has an account; nothing changes.
 */
export function addressInUseMail(product: string, to: string): Mail {
  const lines = [
    `Someone asked to make ${to} the e-mail address of another ${product} account. This address already belongs to your account, so nothing changed.`,
    'If it was you, sign in with this address instead. If it was not you, ignore this mail: your account stays as it is.',
  ];
  return {
    kind: 'email-change-address-in-use',
    to,
    subject: `Your ${product} account`,
    text: textMail(lines),
    html: htmlMail(product, 'This address already has an account', lines),
  };
}
