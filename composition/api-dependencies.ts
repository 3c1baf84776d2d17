import type { Client } from '@temporalio/client';
import type { Router } from 'express';
import type { AppConfig } from '../platform/config/config-schema';
import { MISSING_KEY_MESSAGE } from '../platform/config/key-ring';
import { createMailer, type Mailer } from '../platform/email/mailer';
import { configureBranding } from '../platform/http/html';
import { logger, type Logger } from '../platform/observability/logger';
import type { KeyRing } from '../platform/security/data-protection';
import type { Db } from '../platform/store/database';
import type { AppProvider } from '../provisioning/apps/app-providers';
import type { TccClient } from '../provisioning/apps/tcc-client';
import { createWorkflowRunner, type WorkflowRunner } from '../provisioning/workflow-runner';
import { createSignIn } from '../sign-in/oidc/sign-in-router';
import { CUTOVER_DASHBOARD_PATH, cutoverDashboard } from '../migration/api/cutover-dashboard';
import { startSigningKeyRotation } from '../sign-in/signing-key-rotation';
import type { SourceReadThrough } from '../sign-in/source-read-through';
import { recoveryMails, type RecoveryMails } from '../sign-in/recovery/recovery-router';
import { createRegistration, type Registration } from '../sign-in/registration';
import { readThroughWindow } from './read-through-window';
import type { ServiceContext } from './service-context';

/** Everything the Express app's handlers are built from; `api/app.ts` mounts them and builds nothing of its own. */
export interface ApiDependencies {
  config: AppConfig;
  db: Db;
  temporal: Client;
  /** The runner every route starts workflows with; apiWorkflowRunner on `temporal` when absent. */
  run?: WorkflowRunner;
  /** Used by the app probe (POST /api/v1/provisioning/apps/{appId}/test). */
  http: TccClient;
  /** The provisioning apps, to refuse a client naming an app that does not exist. */
  apps: AppProvider;
  /** Api:PublicUrl, or the listening URL: the base of every URL the service hands out. */
  publicUrl: string;
  /** The data-protection key ring; the store-backed app provider needs it. */
  dataProtection?: KeyRing;
  /** The OpenID Connect provider and its sign-in pages, when the service has a data-protection key ring. */
  signIn?: Router;
  /** The mails of account recovery; the admin's reset mail exists with sign-in only (its links lead there). */
  mails?: RecoveryMails;
  /** The cutover's read-through window (Migration:ReadThrough), while it is configured. */
  readThrough?: SourceReadThrough;
  /** Self-service registration, shared by the API and the sign-up page; made from the rest when absent. */
  registration?: Registration;
  /** The logger every request's lines go to (each with its request id); the process's logger by default. */
  log?: Logger;
}

/** The runner every API route starts workflows with: the provisioning task queue, the API's result deadline. */
export const apiWorkflowRunner = (temporal: Client, config: AppConfig) =>
  createWorkflowRunner(temporal, config.Temporal.TaskQueue, config.Api.ResultTimeoutSeconds);

/**
 * Every instance starts the cluster's signing-key rotation (one workflow, whoever starts it first). Temporal out of
 * reach at start is logged, not fatal: sign-in serves the stored keys, and the next start of any instance tries again.
 */
async function startRotation(temporal: Client, config: AppConfig): Promise<void> {
  try {
    const outcome = await startSigningKeyRotation(temporal, config.Temporal.TaskQueue);
    logger.debug(`api: signing-key rotation ${outcome === 'started' ? 'started' : 'already runs'} for this cluster`);
  } catch (error) {
    logger.warn(`api: signing-key rotation could not be started: ${(error as Error).message}`);
  }
}

/** The API's dependencies with what owns resources beyond the service context: the mailer and the window's pool. */
export interface AssembledApi {
  dependencies: ApiDependencies & { run: WorkflowRunner };
  mailer: Mailer;
  close: () => Promise<void>;
}

/**
 * Builds the API's dependencies once, on the service context: the branding, the mailer and the recovery mails, the
 * read-through window, the workflow runner and, where there is a data-protection key ring, sign-in. `publicUrl` is
 * known only once the port is bound (a port 0 is part of the default).
 */
export async function assembleApi(
  config: AppConfig,
  context: Pick<ServiceContext, 'db' | 'http' | 'apps' | 'dataProtection' | 'sourceDataProtection' | 'clients'>,
  temporal: Client,
  publicUrl: string,
): Promise<AssembledApi> {
  const { db, http, apps, dataProtection } = context;
  configureBranding(config.SignIn);
  const mailer = createMailer(config);
  const mails = recoveryMails({ db, config, mailer, publicUrl });
  const window = readThroughWindow(config, context);
  const readThrough = window.readThrough;
  const run = apiWorkflowRunner(temporal, config);
  // The confirmation mail's link opens a sign-in page: without sign-in, registration sends none.
  const registration = createRegistration({ config, db, run, mails: dataProtection && mails, readThrough });
  const signIn = dataProtection
    ? await createSignIn({
        config,
        db,
        clients: context.clients,
        ring: dataProtection,
        run,
        issuer: publicUrl,
        mailer,
        mails,
        readThrough,
        // The operators' pages, under the status endpoint's rule: mapped, or not there at all (404).
        adminPages: config.Migration.MapStatusEndpoint
          ? { [CUTOVER_DASHBOARD_PATH]: cutoverDashboard({ config, db }) }
          : undefined,
        registration,
      })
    : undefined;
  if (!signIn) logger.warn(`api: sign-in is off: ${MISSING_KEY_MESSAGE}`);
  if (signIn && config.KeyManagement.Enabled) await startRotation(temporal, config);
  if (config.Api.PublicUrl?.startsWith('https:') && config.Api.TrustedProxies.length === 0)
    logger.warn(
      'api: Api:PublicUrl is https but Api:TrustedProxies is empty: X-Forwarded-For is not believed, so behind a proxy every caller counts as the proxy toward the sign-in and registration limits; list the proxy addresses',
    );
  return {
    dependencies: {
      config,
      db,
      temporal,
      run,
      http,
      apps,
      publicUrl,
      dataProtection,
      signIn,
      mails,
      readThrough,
      registration,
    },
    mailer,
    close: () => {
      mailer.close();
      return window.close();
    },
  };
}
