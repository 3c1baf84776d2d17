import { z } from 'zod';
import { FIELD_BOUNDS } from '../security/field-bounds';
import { hasControlCharacter } from '../security/storable-text';

/** First and last names, as every user-creation body takes them. */
export const personName = z.string().trim().min(1).max(FIELD_BOUNDS.name);

/** An e-mail address, as every body and query takes it. */
export const emailAddress = z.email().max(FIELD_BOUNDS.email);

/** A password as a body carries it: its policy (Auth:PasswordPolicy) is checked where the route knows it. */
export const passwordText = z.string().max(FIELD_BOUNDS.password);

/**
 * A date the store can hold and a person could mean: a valid date between the years 1 and 9999 (JavaScript's Date
 * reaches ±275,760 years, PostgreSQL's timestamptz not that far, and such a date is a mistake either way).
 */
export const storableDate = z.coerce
  .date({ error: 'must be a date, such as 2030-01-31 or 2030-01-31T12:00:00Z' })
  .refine((d) => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999, 'must be a date between the years 1 and 9999');

/** Schemes a redirect may never go to: they run code in, or read from, the browser that follows them. */
const UNSAFE_REDIRECT_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:']);

/** The URL a text is, or undefined: each check after the URL check runs even when that one failed. */
const urlOf = (text: string) => (URL.canParse(text) ? new URL(text) : undefined);

/**
 * A redirect URI of a client: absolute, at most 2000 characters, no fragment (RFC 6749 §3.1.2), no user name or
 * password (RFC 9700 §4.1.1: redirect URIs are compared exactly, and credentials in one are a phishing aid), no
 * whitespace or control character (the URL parser would drop a trailing newline that the exact comparison then misses),
 * and not a scheme that runs code in the browser. Custom schemes of native apps (`com.example.app:/callback`) are fine.
 */
export const redirectUri = z
  .string()
  .max(2000)
  .refine(
    (uri) => !/\s/.test(uri) && !hasControlCharacter(uri),
    'must not contain spaces or control characters (a trailing newline included)',
  )
  .pipe(z.url())
  .refine((uri) => !UNSAFE_REDIRECT_SCHEMES.has(urlOf(uri)?.protocol ?? ''), {
    error: (issue) => `the scheme ${urlOf(String(issue.input))?.protocol} is not allowed for a redirect`,
  })
  .refine((uri) => !urlOf(uri)?.hash && !uri.includes('#'), 'must not carry a fragment (#…)')
  .refine(
    (uri) => !urlOf(uri)?.username && !urlOf(uri)?.password,
    'must not carry a user name or password (user:password@)',
  );
