import express, { Router } from 'express';
import { signInErrorPage } from '../error-page';
import { postConfirmation } from './confirmation';
import { postAbort, postConsent, postSwitchAccount, showConsent } from './consent';
import { createInteractionContext, interactionOf, type InteractionDependencies } from './interaction-context';
import { postEmail, postRestart, showSignIn } from './email';
import { federatedReturn } from './federated';
import { postPassword } from './password';
import { postCode } from './second-factor';
import { postSignUp, showSignUp, signUpLimit } from './sign-up';

export type { InteractionDependencies };

/**
 * The sign-in pages of oidc-provider's interactions: the e-mail first (so single sign-on can later send some domains
 * elsewhere) with "Create an account" beside it where registration is allowed, then the password, then the second
 * factor when the user has two-step verification on; then consent, where a
 * client's `provisioningApps` are provisioned before the code is issued. The interaction's own cookie, bound to its
 * uid, is what makes a form post from another site fail.
 */
export function interactionRouter(deps: InteractionDependencies): Router {
  const ctx = createInteractionContext(deps);
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });
  const signIn = showSignIn(ctx);
  const consent = showConsent(ctx);
  router.get('/interaction/:uid', async (req, res) => {
    const details = await interactionOf(deps.provider, req, res);
    if (details.prompt.name === 'login') return signIn(res, details);
    await consent(req, res, details);
  });
  router.post('/interaction/:uid/email', form, postEmail(ctx));
  // Auth:AllowRegistration false: no "Create an account" on the e-mail page, and these paths are not found.
  if (deps.config.Auth.AllowRegistration) {
    router.get('/interaction/:uid/sign-up', showSignUp(ctx));
    router.post('/interaction/:uid/sign-up', signUpLimit(ctx), form, postSignUp(ctx));
  }
  router.post('/interaction/:uid/restart', form, postRestart(ctx));
  router.post('/interaction/:uid/confirmation', form, postConfirmation(ctx));
  router.get('/interaction/:uid/federated', federatedReturn(ctx));
  router.post('/interaction/:uid/password', form, postPassword(ctx));
  router.post('/interaction/:uid/code', form, postCode(ctx));
  router.post('/interaction/:uid/consent', form, postConsent(ctx));
  router.post('/interaction/:uid/abort', form, postAbort(ctx));
  router.post('/interaction/:uid/switch', form, postSwitchAccount(ctx));
  router.use(signInErrorPage);
  return router;
}
