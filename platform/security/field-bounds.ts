/**
 * The longest value of each kind of field the service takes, in one table: every route, form and check reads its
 * bound here. An e-mail address (RFC 5321 allows 254; the store's indexes hold 256), a name or id, a password (long
 * passphrases, never a hashing workload of its own), an attribute name and value.
 */
export const FIELD_BOUNDS = {
  email: 256,
  name: 256,
  id: 256,
  password: 1024,
  attributeName: 128,
  attributeValue: 4096,
} as const;

/**
 * The longest lifetime of anything the service issues (a token, a code): ten years, in seconds. Longer is a mistake
 * (IdentityServer's own lifetimes are hours to months), and a lifetime past what a date can hold would fail every
 * token request of the client.
 */
export const MAX_LIFETIME_SECONDS = 10 * 365 * 24 * 3600;
