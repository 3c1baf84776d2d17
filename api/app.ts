import express from 'express';
import { trustProxySetting } from '../platform/security/trusted-proxies';
import { identityAdminCheck, requireIdentityAdmin } from '../platform/http/identity-admin';
import { edgeGuard, rejectJsonProblems } from '../platform/http/edge-guard';
import { MISSING_KEY_MESSAGE } from '../platform/config/key-ring';
import { payloadCodecOf } from '../platform/temporal/data-converter';
import { codecRouter } from '../platform/http/codec';
import { errorHandler } from '../platform/http/error-handler';
import { sendProblem, speaksErrorDialect } from '../platform/http/problem';
import { homePage, sendPage } from '../platform/http/html';
import { requestObservability } from '../platform/observability/http';
import { logger } from '../platform/observability/logger';
import type { ApiDependencies } from '../composition/api-dependencies';
import { serviceTokenCheck } from '../sign-in/api/service-token';
import { isSignInPath } from '../sign-in/sign-in-paths';
import { scimDocumentationPage } from '../scim/documentation';
import { answerScimError, SCIM_CONTENT_TYPE, SCIM_ERROR_DIALECT } from '../scim/scim-errors';
import { requireScimToken, scimFallback } from '../scim/scim-router';
import { apiReferencePage } from './routes/api-docs';
import { mountRoutes } from './mount-routes';
import { ROUTES } from './openapi/routes';
import { routeHandlers } from './route-handlers';
import { routeOf } from './route-labels';

/** The body types each part of the service takes; a body of any other type is refused with 415 before a route sees it. */
const BODY_TYPES = {
  scim: [SCIM_CONTENT_TYPE, 'application/json'],
  json: ['application/json'],
  form: ['application/x-www-form-urlencoded'],
};
const JSON_BODY_TYPES = [...new Set([...BODY_TYPES.scim, ...BODY_TYPES.json])];
const bodyTypesOf = (req: express.Request) =>
  isSignInPath(req.path) ? BODY_TYPES.form : req.originalUrl.startsWith('/scim/') ? BODY_TYPES.scim : BODY_TYPES.json;

/** Without a data-protection key ring there is no sign-in: its paths say why instead of answering 404. */
const signInUnavailable: express.RequestHandler = (req, res, next) => {
  if (!isSignInPath(req.path)) return next();
  sendProblem(res, {
    status: 503,
    title: 'Sign-in unavailable',
    detail: `sign-in keeps signing keys and MFA secrets sealed at rest and needs a data-protection key. ${MISSING_KEY_MESSAGE}`,
  });
};

/**
 * The Express app: the edge (observability, proxies, the edge guard, body types), the codec endpoint, sign-in, then
 * every route of the table with its guard and its handler, the pages for people, and the one error handler. It builds
 * nothing but the guards: the handlers come from the dependencies the composition root assembled.
 */
export function createApiApp(deps: ApiDependencies): express.Express {
  const { config, db, publicUrl, signIn, log = logger } = deps;
  const app = express();
  app.disable('x-powered-by');
  app.use(requestObservability(log, routeOf));
  // The client address (the key of the sign-in and registration limits) comes from X-Forwarded-For only when the
  // request arrived from one of Api:TrustedProxies; from anyone else the header is the client's own say.
  app.set('trust proxy', trustProxySetting(config.Api.TrustedProxies));
  app.use('/scim', speaksErrorDialect(SCIM_ERROR_DIALECT));
  app.use(edgeGuard(bodyTypesOf));
  // The service's own access tokens count only where it issues them.
  const adminCheck = identityAdminCheck(
    config.Auth.AdminApiKeys,
    signIn ? serviceTokenCheck(db, publicUrl) : undefined,
  );
  const identityAdmin = requireIdentityAdmin(adminCheck);
  // Ahead of the JSON parser: a batch of payloads from the Temporal UI may exceed the API's own body limit.
  app.use(
    '/codec',
    codecRouter({
      codec: payloadCodecOf(config),
      allowedOrigins: config.Temporal.CodecCorsOrigins,
      identityAdmin,
      openToLoopback: config.Temporal.CodecOpenToLoopback,
    }),
  );
  app.use(signIn ?? signInUnavailable);
  app.use(express.json({ limit: '100kb', type: JSON_BODY_TYPES }));
  app.use(rejectJsonProblems());

  mountRoutes(app, ROUTES, routeHandlers(deps, adminCheck), {
    admin: [identityAdmin],
    scim: [requireScimToken(db)],
    public: [],
  });

  // Pages for people, beside the API's operations: the API reference and the SCIM guide (public: a SCIM client's
  // administrator reads it before holding a token).
  app.use(apiReferencePage());
  app.get('/docs/scim', (_req, res) => res.type('html').send(scimDocumentationPage(`${publicUrl}/scim/v2`)));
  app.use('/scim/v2', scimFallback(db));
  // The root URL: a page for a person who typed the service's address; an API client asking for JSON gets the 404
  // problem as for any other path it has no route for.
  app.get('/', (req, res, next) =>
    req.accepts(['html', 'json']) === 'html' ? sendPage(res, 200, homePage()) : next(),
  );

  app.use((req, res) =>
    sendProblem(res, { status: 404, title: 'Not found', detail: `no route for ${req.method} ${req.path}` }),
  );

  app.use(errorHandler([answerScimError]));
  return app;
}
