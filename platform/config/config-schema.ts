import { z } from 'zod';
import { isForbiddenKey } from '../security/object-keys';
import { isAddressOrCidr } from '../security/trusted-proxies';
import { callbackUrlProblem, describeAllowListEntryProblem, parseAllowList } from '../security/callback-address';
import { isBackChannelLogoutUri } from './client-rules';
import { MAX_LIFETIME_SECONDS } from '../security/field-bounds';
import { hasControlCharacter } from '../security/storable-text';

/** Booleans arrive as strings from environment variables and flags; "false" must stay false. */
const flag = z.union([
  z.boolean(),
  z.enum(['true', 'false', 'True', 'False']).transform((v) => v.toLowerCase() === 'true'),
]);

/** ASP.NET-style configuration lists arrive as a string (one value) or an index-keyed object from env/flags. */
const asList = (value: unknown) => {
  if (typeof value === 'string')
    return value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  if (value && typeof value === 'object' && !Array.isArray(value)) return Object.values(value) as unknown[];
  return value;
};
const stringList = z.preprocess(asList, z.array(z.string().min(1)));

/** Lists of objects arrive as an index-keyed object from env/flags (`DataProtection__Keys__0__Id`). */
const indexedList = <T extends z.ZodType>(item: T) =>
  z.preprocess(
    (value) => (value && typeof value === 'object' && !Array.isArray(value) ? Object.values(value) : value),
    z.array(item),
  );

/**
 * A .NET TimeSpan as appsettings.json writes it (`[-][d.]hh:mm[:ss[.fffffff]]`: `"90.00:00:00"`, `"00:02:00"`),
 * as milliseconds. IdentityServer's KeyManagement durations are read in this form.
 */
export const timeSpan = z.string().transform((text, ctx) => {
  const m = /^(-)?(?:(\d+)\.)?(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,7}))?)?$/.exec(text.trim());
  if (!m || Number(m[3]) > 23 || Number(m[4]) > 59 || Number(m[5] ?? 0) > 59) {
    ctx.addIssue({ code: 'custom', message: 'use a TimeSpan such as "90.00:00:00" (days.hours:minutes:seconds)' });
    return z.NEVER;
  }
  const [, minus, days = '0', hours, minutes, seconds = '0', fraction = '0'] = m;
  const ms =
    ((Number(days) * 24 + Number(hours)) * 60 + Number(minutes)) * 60_000 +
    Number(seconds) * 1000 +
    Math.round(Number(`0.${fraction}`) * 1000);
  return minus ? -ms : ms;
});

/**
 * Automatic signing-key management as Duende IdentityServer names it: a key is announced (in the JWKS) for
 * PropagationTime before it signs, signs until it is RotationInterval old, and stays in the JWKS for
 * RetentionDuration after that; then it is deleted. Keys are looked for again every KeyCacheDuration, and a key
 * new to the store never signs before every instance has had two such looks at it.
 */
export const keyManagementSchema = z
  .object({
    Enabled: flag.default(true),
    RotationInterval: timeSpan.prefault('90.00:00:00'),
    PropagationTime: timeSpan.prefault('14.00:00:00'),
    RetentionDuration: timeSpan.prefault('14.00:00:00'),
    KeyCacheDuration: timeSpan.prefault('00:00:05'),
  })
  .prefault({})
  .refine((k) => k.RotationInterval > k.PropagationTime, {
    message: 'RotationInterval must be longer than PropagationTime (a key must sign for some time)',
  })
  .refine((k) => k.PropagationTime >= 0 && k.RetentionDuration >= 0 && k.KeyCacheDuration > 0, {
    message: 'PropagationTime and RetentionDuration may not be negative, KeyCacheDuration must be positive',
  });

const dataProtectionKey = z
  .string()
  .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be base64 of exactly 32 bytes');

/** `[{ Id, Key }]`: a key ring, the first key sealing new values, the others still opening older ones. */
const keyList = indexedList(
  z.object({
    Id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'use 1-64 letters, digits, ".", "_" and "-"'),
    Key: dataProtectionKey,
  }),
);

export const provisioningAppSchema = z.object({
  CallbackUrl: z.string().min(1),
  // Sent as `Authorization: Bearer <ApiKey>`: a key a header cannot carry (CR, LF, other control or non-ASCII
  // characters) or of absurd length would fail every call to the app.
  ApiKey: z
    .string()
    .min(1)
    .max(4096, 'must be at most 4096 characters')
    .regex(/^[\x20-\x7e]+$/, 'must be printable ASCII without control characters (it is sent in an HTTP header)'),
  TryTimeoutSeconds: z.coerce.number().int().positive().max(3600).default(60),
});

export const appIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'app ids use letters, digits, ".", "_" and "-" (at most 64)')
  .refine((id) => !isForbiddenKey(id), 'this app id is a reserved name');

/** IdentityServer's TokenUsage: ReUse (0) keeps a refresh token, OneTimeOnly (1) rotates it at every use. */
const refreshTokenUsage = z.union([
  z.coerce.number().int().min(0).max(1),
  z.enum(['ReUse', 'OneTimeOnly']).transform((v) => (v === 'ReUse' ? 0 : 1)),
]);

/** IdentityServer's TokenExpiration: Sliding (0) or Absolute (1), by number or by its enum name. */
const refreshTokenExpiration = z.union(
  [z.coerce.number().int().min(0).max(1), z.enum(['Sliding', 'Absolute']).transform((v) => (v === 'Sliding' ? 0 : 1))],
  { error: 'must be Sliding (0) or Absolute (1), as IdentityServer names them' },
);

/** IdentityServer's AccessTokenType: Jwt (0) or Reference (1), by number or by its enum name. */
const accessTokenType = z.union(
  [z.coerce.number().int().min(0).max(1), z.enum(['Jwt', 'Reference']).transform((v) => (v === 'Jwt' ? 0 : 1))],
  { error: 'must be Jwt (0) or Reference (1), as IdentityServer names them' },
);

/** A lifetime in seconds, bounded: a longer one is a mistake that would fail every token request of the client. */
const lifetimeSeconds = (min: number) =>
  z.coerce
    .number()
    .int()
    .min(min)
    .max(MAX_LIFETIME_SECONDS, `must be at most ${MAX_LIFETIME_SECONDS} seconds (10 years)`);

/** A list in ASP.NET configuration's shapes (see stringList) whose every item is `item`. */
const listOf = (item: z.ZodType<string>, max: number) =>
  z.preprocess(asList, z.array(item).max(max, `at most ${max} entries`));

/** RFC 6749 §3.3: a scope token is printable ASCII without spaces, `"` or `\\`. */
const scopeName = z
  .string()
  .max(200)
  .regex(
    /^[\x21\x23-\x5b\x5d-\x7e]+$/,
    'a scope is printable ASCII without spaces, quotes or backslashes (RFC 6749 §3.3)',
  );

/**
 * A CORS origin as browsers send it (`https://app.example.com`, a port when not the scheme's own): never `null`
 * (sandboxed frames and file pages of any site send that) nor `*`, nor a URL with a path.
 */
const corsOrigin = z
  .string()
  .refine(
    (origin) =>
      URL.canParse(origin) &&
      ['http:', 'https:'].includes(new URL(origin).protocol) &&
      new URL(origin).origin === origin,
    'must be an origin such as https://app.example.com: http or https, host and port only, in lower case (not "null" or "*")',
  );

/** Text a person reads (a client's name): no control characters, which would reach logs and pages as they are. */
const displayText = (max: number) =>
  z
    .string()
    .max(max)
    .refine(
      (text) => !hasControlCharacter(text),
      'must not contain control characters (ESC, CR, LF, tab and the like)',
    );

/** A client in IdentityServer's own appsettings shape, so operators can paste their existing client list. */
export const clientConfigSchema = z.object({
  ClientId: z
    .string()
    .min(1)
    .max(200)
    // RFC 6749 Appendix A.1: a client_id is VSCHARs; the provider refuses any other, so none is stored.
    .regex(/^[\x20-\x7e]+$/, 'must be printable ASCII (no control characters, no characters beyond ASCII)')
    .refine((id) => !isForbiddenKey(id), 'this client id is a reserved name'),
  ClientName: displayText(200).optional(),
  Enabled: flag.default(true),
  /** Values as IdentityServer's configuration holds them: base64 of the SHA-256 or SHA-512 digest of the secret. */
  ClientSecrets: indexedList(
    z.object({
      Value: z.string().min(1),
      Description: z.string().max(200).optional(),
      Expiration: z.coerce.date().optional(),
    }),
  ).default([]),
  RequireClientSecret: flag.default(true),
  AllowedGrantTypes: stringList.default([]),
  RedirectUris: stringList.default([]),
  PostLogoutRedirectUris: stringList.default([]),
  AllowedScopes: listOf(scopeName, 200).default([]),
  RequirePkce: flag.default(true),
  AllowOfflineAccess: flag.default(false),
  RequireConsent: flag.default(false),
  /** Whether the consent page offers "Remember my decision" (IdentityServer's default: true). */
  AllowRememberConsent: flag.optional(),
  /** How long a remembered consent lasts, in seconds; none: until withdrawn. */
  ConsentLifetime: lifetimeSeconds(1).nullable().optional(),
  /** The client's home page: pages that end a path lead back to it. */
  ClientUri: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .optional(),
  AllowedCorsOrigins: listOf(corsOrigin, 100).default([]),
  AccessTokenLifetime: lifetimeSeconds(1).default(3600),
  IdentityTokenLifetime: lifetimeSeconds(1).default(300),
  AuthorizationCodeLifetime: lifetimeSeconds(1).default(300),
  AbsoluteRefreshTokenLifetime: lifetimeSeconds(0).default(2592000),
  SlidingRefreshTokenLifetime: lifetimeSeconds(0).default(1296000),
  RefreshTokenUsage: refreshTokenUsage.default(1),
  RefreshTokenExpiration: refreshTokenExpiration.optional(),
  AccessTokenType: accessTokenType.optional(),
  /** Where back-channel logout tokens are posted (OpenID Connect Back-Channel Logout 1.0); IdentityServer's name. */
  BackChannelLogoutUri: z
    .string()
    .max(2000)
    .refine(isBackChannelLogoutUri, 'must be an absolute http or https URL')
    .nullable()
    .optional(),
  /** Whether logout tokens carry the session id (`sid`); IdentityServer's default is true. */
  BackChannelLogoutSessionRequired: flag.optional(),
});

export const configSchema = z
  .object({
    ProvisioningApps: z.record(appIdSchema, provisioningAppSchema).default({}),
    /** Applied to the clients store at start; a configured client wins over a migrated one with the same id. */
    Clients: indexedList(clientConfigSchema).default([]),
    Oidc: z
      .object({
        /** Keys that sign the provider's cookies, newest first; without them a development key is generated and stored. */
        CookieKeys: stringList.optional(),
        /**
         * How often a running provider looks for new scopes and signing keys (a migration or a key import in another
         * process) and rebuilds itself with them; 0 looks at every request.
         */
        ReloadSeconds: z.coerce.number().int().min(0).max(86_400).default(30),
        /** Duende IdentityServer's option of that name: `scope` in JWT access tokens as one string, not an array. */
        EmitScopesAsSpaceDelimitedStringInJwt: flag.default(false),
      })
      .prefault({}),
    /**
     * Duende IdentityServer's Discovery:ResponseCacheInterval, in seconds: discovery and the JWKS carry
     * `Cache-Control: max-age` of it (0: no-store); unset, as IdentityServer's default, they carry none.
     */
    Discovery: z.object({ ResponseCacheInterval: z.coerce.number().int().min(0).max(86_400).optional() }).prefault({}),
    /**
     * Duende IdentityServer's Caching:ClientStoreExpiration, in seconds: how long an API process may use its copy of
     * a client and its secrets. A change to either reaches every process at once (the store announces it), so this
     * only bounds what a lost announcement could cost; 0 reads the store at every request.
     */
    Caching: z.object({ ClientStoreExpiration: z.coerce.number().int().min(0).max(86_400).default(300) }).prefault({}),
    KeyManagement: keyManagementSchema,
    Auth: z
      .object({
        AllowedInternalTargets: stringList.default([]),
        AdminApiKeys: stringList.default([]),
        PasswordPolicy: z
          .object({
            MinLength: z.coerce.number().int().min(1).max(1024).default(8),
            RequireDigit: flag.default(false),
            RequireUppercase: flag.default(false),
            RequireLowercase: flag.default(false),
            RequireNonAlphanumeric: flag.default(false),
          })
          .prefault({}),
        /** ASP.NET Identity's defaults: 5 failed sign-ins lock an account for 15 minutes. */
        Lockout: z
          .object({
            MaxFailedAttempts: z.coerce.number().int().positive().default(5),
            Minutes: z.coerce.number().positive().default(15),
          })
          .prefault({}),
        /** Sign-in attempts per client IP: PermitLimit per WindowSeconds, across every account. */
        SignInRateLimit: z
          .object({
            PermitLimit: z.coerce.number().int().positive().default(30),
            WindowSeconds: z.coerce.number().int().positive().default(60),
          })
          .prefault({}),
        /**
         * User codes entered at /device (RFC 8628 §5.1: the code is short, so its guessing must be limited): a browser
         * session may submit PermitLimit per WindowSeconds, a client IP AddressPermitLimit, counted in the store
         * across API processes; past either, 429 with Retry-After and the code is not looked up.
         */
        UserCodeRateLimit: z
          .object({
            PermitLimit: z.coerce.number().int().positive().default(10),
            AddressPermitLimit: z.coerce.number().int().positive().default(30),
            WindowSeconds: z.coerce.number().int().positive().default(300),
          })
          .prefault({}),
        /**
         * How recent a sign-in must be (minutes) to change how the user signs in without the password again: enrolling
         * an authenticator app, and, for a user without a password, new recovery codes or turning two-step verification off.
         */
        RecentSignInMinutes: z.coerce.number().int().positive().max(1440).default(5),
        /**
         * Password reset by e-mail: a link's token lives TokenMinutes; an account gets at most PermitLimit links per
         * WindowMinutes (further requests answer the same and send nothing); a client IP may ask AddressPermitLimit
         * times per WindowMinutes across addresses (then 429 with Retry-After).
         */
        PasswordReset: z
          .object({
            TokenMinutes: z.coerce.number().int().positive().max(10_080).default(60),
            PermitLimit: z.coerce.number().int().positive().default(3),
            AddressPermitLimit: z.coerce.number().int().positive().default(30),
            WindowMinutes: z.coerce.number().int().positive().default(15),
          })
          .prefault({}),
        /**
         * ASP.NET Identity's RequireConfirmedEmail (false by default): when true, registration mails a confirmation
         * link, and a user whose address is not confirmed cannot sign in until it is.
         */
        RequireConfirmedEmail: flag.default(false),
        /** How long a confirmation link lives (ASP.NET Identity's default token lifespan: one day). */
        EmailConfirmationTokenMinutes: z.coerce.number().int().positive().max(43_200).default(1440),
        /**
         * Whether people may create their own accounts (Keycloak's "User registration", ASP.NET Identity's Register
         * page): the sign-in's e-mail page offers "Create an account" and `POST /api/auth/register` answers. True by
         * default, as the spec's public registration endpoint implies; false leaves accounts to admins, SCIM, the
         * migration and organizations' identity providers (the route then answers 404 naming this setting).
         */
        AllowRegistration: flag.default(true),
        /** Self-registration budget per client IP: PermitLimit requests per WindowSeconds. */
        RegistrationRateLimit: z
          .object({
            PermitLimit: z.coerce.number().int().positive().default(10),
            WindowSeconds: z.coerce.number().int().positive().default(60),
          })
          .prefault({}),
      })
      .prefault({}),
    /**
     * Outgoing mail (password reset, e-mail confirmation). With Smtp:Host set, through that SMTP server; without it,
     * each mail is written to OutboxPath (one .eml file a mail) and the log says where.
     */
    Email: z
      .object({
        Smtp: z
          .object({
            Host: z.string().min(1).optional(),
            Port: z.coerce.number().int().min(1).max(65535).default(587),
            /** TLS from the first byte (port 465); false: STARTTLS, required as RequireTls says. */
            Secure: flag.default(false),
            /**
             * Without Secure, whether mail may go only after STARTTLS (nodemailer's requireTLS). Unset: required unless
             * Host is a loopback address or name, so a server (or a man in the middle) that does not offer STARTTLS
             * cannot have mail with reset links sent as plain text. False sends in plain text when not offered.
             */
            RequireTls: flag.optional(),
            User: z.string().min(1).optional(),
            Password: z.string().min(1).optional(),
          })
          .prefault({}),
        From: z.string().min(3).default('Identity <no-reply@localhost>'),
        OutboxPath: z.string().min(1).default('.data/outbox'),
      })
      .prefault({}),
    /** What every page a person sees is branded with. */
    SignIn: z
      .object({
        ProductName: z.string().trim().min(1).max(100).default('Identity'),
        /** An absolute https URL (or a path of this service) of a logo shown above each page's title. */
        LogoUrl: z
          .string()
          .max(2000)
          .refine((v) => v.startsWith('/') || /^https:\/\//.test(v), 'must be an https URL or a path starting with /')
          .optional(),
      })
      .prefault({}),
    /** The audit trail of account events: kept RetentionDays, then deleted. */
    Audit: z.object({ RetentionDays: z.coerce.number().int().positive().max(3650).default(90) }).prefault({}),
    Api: z
      .object({
        Port: z.coerce.number().int().min(0).max(65535).default(5000),
        Host: z.string().default('127.0.0.1'),
        ResultTimeoutSeconds: z.coerce.number().int().positive().default(180),
        /**
         * The reverse proxies in front of the service (addresses or CIDRs, for example `10.0.0.5` or `10.0.0.0/24`):
         * only a request arriving from one of them has its X-Forwarded-For believed, so the client address the
         * sign-in and registration limits count by cannot be chosen by the client. Default: none.
         */
        TrustedProxies: stringList
          .pipe(
            z.array(z.string().refine(isAddressOrCidr, 'must be an IP address or a CIDR range such as 10.0.0.0/24')),
          )
          .default([]),
        /**
         * The service's public base URL (scheme, host, port, optional path), used for every URL it hands out (SCIM
         * locations, later the sign-in issuer). Default: the listening URL, with 127.0.0.1 for a wildcard address.
         */
        PublicUrl: z
          .url({ protocol: /^https?$/, error: 'must be an absolute http or https URL' })
          .refine((v) => !new URL(v).search && !new URL(v).hash, 'must not carry a query or fragment')
          .transform((v) => v.replace(/\/+$/, ''))
          .optional(),
      })
      .prefault({}),
    Temporal: z
      .object({
        Address: z.string().optional(),
        Namespace: z.string().default('default'),
        TaskQueue: z.string().min(1).default('provisioning'),
        MigrationTaskQueue: z.string().min(1).default('migration'),
        UiPort: z.coerce.number().int().positive().default(8233),
        /**
         * Seal every payload the service writes to Temporal (AES-256-GCM): new payloads use the first key, older keys
         * still open older payloads. Required with Temporal:Address; the embedded default generates one.
         */
        PayloadKeys: keyList.optional(),
        /** Origins of Temporal UIs allowed to call the codec endpoint from a browser (the embedded UI's is added by `npm start`). */
        CodecCorsOrigins: indexedList(z.url()).default([]),
        /**
         * Let loopback callers use the codec endpoint without a credential: set by `npm start` for its embedded Temporal
         * UI, which cannot send one. Everywhere else the endpoint takes the admin API's credentials.
         */
        CodecOpenToLoopback: flag.default(false),
      })
      .prefault({}),
    Database: z.object({ Url: z.string().optional() }).prefault({}),
    Provisioning: z
      .object({
        /** Store: apps are managed at run time through /api/v1/provisioning/apps instead of ProvisioningApps. */
        AppProvider: z.enum(['Configuration', 'Store']).default('Configuration'),
      })
      .prefault({}),
    /** Section and key names are the spec's; CLI flags are the same names (`--DryRun true`, `--Source:ConnectionString …`). */
    Migration: z
      .object({
        Enabled: flag.default(false),
        DryRun: flag.default(false),
        Version: z
          .string()
          .trim()
          .min(1)
          .max(100)
          .regex(/^[A-Za-z0-9._-]+$/, 'use letters, digits, ".", "_" and "-"')
          .default('1'),
        UsersMode: z.enum(['CreateOnly', 'Upsert']).default('CreateOnly'),
        MigrateClients: flag.default(true),
        MigrateRefreshTokens: flag.default(false),
        /** The signing-keys pass: on where SourceDataProtection:ApplicationName is set, unless this is false. */
        MigrateSigningKeys: flag.default(true),
        /** A Duende FileSystemKeyStore folder (`is-signing-key-{kid}.json`), read besides the source's Keys table. */
        SourceSigningKeys: z.object({ KeyPath: z.string().min(1).optional() }).prefault({}),
        /**
         * Until this moment, a browser that carries the source's authentication cookie (CookieName, scheme Scheme;
         * chunked cookies included) is signed in here as the user that cookie names, with no page; off when unset.
         */
        SourceSessions: z
          .object({
            Until: z.coerce.date().optional(),
            CookieName: z
              .string()
              .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,200}$/, 'must be a cookie name')
              .default('.AspNetCore.Identity.Application'),
            Scheme: z.string().min(1).max(200).default('Identity.Application'),
          })
          .prefault({}),
        SourceGrantKeysAreUnhashed: flag.default(false),
        LeaseWaitMinutes: z.coerce.number().positive().default(10),
        StartupDelaySeconds: z.coerce.number().min(0).default(30),
        /** Users per page of the user-keyed passes; the other passes page at most 2,000 rows (SQL Server's parameter limit). */
        PageSize: z.coerce.number().int().min(10).max(10000).default(10000),
        /** Key ranges of the users and their roles, logins and MFA migrated side by side. */
        Parallelism: z.coerce.number().int().min(1).max(16).default(2),
        /** GET /admin/migration/status exists only when mapped. */
        MapStatusEndpoint: flag.default(false),
        Source: z.object({ ConnectionString: z.string().min(1).optional() }).prefault({}),
        /**
         * The source's ASP.NET Core Data Protection, to open the refresh tokens a stock IdentityServer protected:
         * ApplicationName is its application discriminator (SetApplicationName, or by default its content root path);
         * the key ring is the key-*.xml files at KeyRingPath, or else the source's DataProtectionKeys table.
         */
        SourceDataProtection: z
          .object({
            ApplicationName: z.string().min(1).max(2000).optional(),
            KeyRingPath: z.string().min(1).optional(),
          })
          .prefault({}),
        /**
         * Until this moment, a refresh token or a sign-in e-mail not found here is looked up in the source (read only)
         * and adopted; off when unset. ConnectionString: a read-only login to the source (default Source's).
         * TimeoutSeconds bounds each source query (and the wait for a connection), PoolSize the connections an
         * instance opens, PermitLimit the look-ups of every instance together per WindowSeconds (kept in the store);
         * past any of them a look-up fails closed. RetryAfterSeconds is what a refused registration or federated
         * sign-in is told to wait (503, Retry-After); UnavailableMessage, when set, is what they read instead of the
         * service's own words (a status page, a planned end of the window).
         */
        ReadThrough: z
          .object({
            Until: z.coerce.date().optional(),
            ConnectionString: z.string().min(1).optional(),
            TimeoutSeconds: z.coerce.number().min(0.1).max(60).default(2),
            PoolSize: z.coerce.number().int().min(1).max(64).default(4),
            PermitLimit: z.coerce.number().int().min(1).default(600),
            WindowSeconds: z.coerce.number().int().min(1).max(86_400).default(60),
            RetryAfterSeconds: z.coerce.number().int().min(1).max(3600).default(30),
            UnavailableMessage: z.string().trim().min(1).max(500).optional(),
          })
          .prefault({}),
        Target: z.object({ ConnectionString: z.string().min(1).optional() }).prefault({}),
      })
      .prefault({}),
    /**
     * The key ring that protects every secret kept at rest (app keys, TOTP secrets) and keys recovery-code hashes.
     * `Keys`: `[{ Id, Key }]`, new values use the first; `Key`: the single key of earlier configurations (id "default").
     */
    DataProtection: z
      .object({
        Key: dataProtectionKey.optional(),
        Keys: keyList.optional(),
      })
      .prefault({}),
    /**
     * Prometheus metrics: each process (API, worker, or both under `npm start`) serves GET /metrics on Port, bound to
     * Host (loopback unless set otherwise); the Temporal SDK's own worker metrics on TemporalPort. Off when unset.
     */
    Metrics: z
      .object({
        Port: z.coerce.number().int().min(0).max(65535).optional(),
        Host: z.string().min(1).default('127.0.0.1'),
        TemporalPort: z.coerce.number().int().min(1).max(65535).optional(),
      })
      .prefault({}),
    /** What `npm start` runs itself when Database:Url or Temporal:Address is not set. */
    Embedded: z
      .object({
        DataDir: z.string().default('.data'),
        PostgresPort: z.coerce.number().int().positive().max(65535).default(54329),
        TemporalPort: z.coerce.number().int().positive().max(65535).default(7233),
      })
      .prefault({}),
  })
  .superRefine((config, ctx) => {
    config.Auth.AllowedInternalTargets.forEach((entry, index) => {
      const problem = describeAllowListEntryProblem(entry);
      if (problem) ctx.addIssue({ code: 'custom', path: ['Auth', 'AllowedInternalTargets', index], message: problem });
    });
    let allow;
    try {
      allow = parseAllowList(config.Auth.AllowedInternalTargets);
    } catch {
      return;
    }
    for (const [appId, app] of Object.entries(config.ProvisioningApps)) {
      const problem = callbackUrlProblem(app.CallbackUrl, allow);
      if (problem)
        ctx.addIssue({
          code: 'custom',
          path: ['ProvisioningApps', appId, 'CallbackUrl'],
          message: `refused: ${problem}`,
        });
    }
  });

export type AppConfig = z.infer<typeof configSchema>;
export type ProvisioningAppConfig = z.infer<typeof provisioningAppSchema>;
export type PasswordPolicy = AppConfig['Auth']['PasswordPolicy'];
export type ClientConfig = z.infer<typeof clientConfigSchema>;
