import type { Pass, PassName } from '../types';
import { clientsPass, scopesPass } from './configuration';
import { rolesPass } from './roles';
import { loginsPass, mfaPass, userRolesPass } from './user-children';
import { oidcProvidersPass, samlProvidersPass } from './providers';
import { refreshTokensPass } from './refresh-tokens';
import { signingKeysPass } from './signing-keys';
import { usersPass } from './users';

/** Each pass of the plan (plan.ts) by its name. */
export const PASS_IMPLEMENTATIONS: Record<PassName, Pass> = {
  roles: rolesPass,
  users: usersPass,
  'user-roles': userRolesPass,
  logins: loginsPass,
  mfa: mfaPass,
  scopes: scopesPass,
  clients: clientsPass,
  'saml-providers': samlProvidersPass,
  'oidc-providers': oidcProvidersPass,
  'refresh-tokens': refreshTokensPass,
  'signing-keys': signingKeysPass,
};
