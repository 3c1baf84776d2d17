import type { AppConfig } from '../../../platform/config/config-schema';
import type { KeyRing } from '../../../platform/security/data-protection';
import type { ClientReads } from '../../../platform/store/client-reads';
import type { Db } from '../../../platform/store/database';
import type { SigningJwk } from '../../../platform/store/signing-keys';
import type { SignOut } from '../../sign-out-notices';
import type { SourceReadThrough } from '../../source-read-through';
import type { ScopeClaims } from '../claims';
import type { ApiResources } from '../resources';

export interface ProviderDependencies {
  db: Db;
  /** Clients with their live secrets, kept between requests (platform/store/client-reads.ts). */
  clients: ClientReads;
  /** The service's data-protection ring: it seals what the migration carried over (refresh-token data). */
  ring: KeyRing;
  issuer: string;
  signingKeys: SigningJwk[];
  cookieKeys: string[];
  scopes: ScopeClaims;
  apiResources: ApiResources;
  /** Oidc:EmitScopesAsSpaceDelimitedStringInJwt: `scope` as one string instead of Duende's JSON array. */
  scopesAsString: boolean;
  /** The lockout, rate limit and confirmation rules the password grant holds as the sign-in pages do. */
  config: AppConfig;
  /** Tells the clients of a session that ends at /connect/endsession (back-channel logout). */
  signOut: SignOut;
  /** The cutover's read-through window, while it is configured. */
  readThrough?: SourceReadThrough;
}
