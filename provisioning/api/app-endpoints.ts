import { parsedPathParam, pathParam, type Operations } from '../../platform/http/operations';
import type { TccClient } from '../apps/tcc-client';
import { appIdSchema } from '../../platform/config/config-schema';
import { callbackUrlProblem, type AllowList } from '../../platform/security/callback-address';
import type { KeyRing } from '../../platform/security/data-protection';
import type { Db } from '../../platform/store/database';
import { clientsListingApp } from '../../platform/store/clients';
import {
  deleteStoredApp,
  findStoredApp,
  insertStoredApp,
  listStoredApps,
  replaceStoredApp,
  type ProvisioningApp,
} from '../store/provisioning-apps';
import { sendProblem } from '../../platform/http/problem';
import { parseApp, refusedAddress } from './app-body';
import { probeApp } from './app-probe';

/** ApiKey is write-only: it is never part of an answer. */
const view = (app: ProvisioningApp) => ({
  appId: app.appId,
  CallbackUrl: app.callbackUrl,
  TryTimeoutSeconds: app.tryTimeoutSeconds,
});

export function provisioningAppsOperations({
  db,
  ring,
  allow,
  http,
}: {
  db: Db;
  ring: KeyRing;
  allow: AllowList;
  http: TccClient;
}): Operations {
  const notFound = (appId: string) => ({ status: 404, title: 'App not found', detail: `no provisioning app ${appId}` });

  return {
    listProvisioningApps: async (_req, res) => {
      res.json((await listStoredApps(db, ring)).map(view));
    },
    getProvisioningApp: async (req, res) => {
      const app = await findStoredApp(db, ring, pathParam(req, 'appId'));
      if (!app) return sendProblem(res, notFound(pathParam(req, 'appId')));
      res.json(view(app));
    },
    createProvisioningApp: async (req, res) => {
      const parsed = parseApp(allow, req.body);
      if ('problem' in parsed) return sendProblem(res, parsed.problem);
      if (!(await insertStoredApp(db, ring, parsed.app))) {
        return sendProblem(res, {
          status: 409,
          title: 'App exists',
          detail: `provisioning app ${parsed.app.appId} exists already; PUT replaces it`,
        });
      }
      res.status(201).location(`${req.path}/${parsed.app.appId}`).json(view(parsed.app));
    },
    replaceProvisioningApp: async (req, res) => {
      const appId = parsedPathParam(req, 'appId', appIdSchema);
      const parsed = parseApp(allow, req.body, appId);
      if ('problem' in parsed) return sendProblem(res, parsed.problem);
      if (!(await replaceStoredApp(db, ring, parsed.app))) return sendProblem(res, notFound(appId));
      res.json(view(parsed.app));
    },
    deleteProvisioningApp: async (req, res) => {
      // A client that lists the app provisions into it at every first authorization: without the app, every sign-in
      // through that client would be refused. The clients are changed first.
      const listing = await clientsListingApp(db, pathParam(req, 'appId'));
      if (listing.length > 0)
        return sendProblem(res, {
          status: 409,
          title: 'App in use',
          detail: `clients ${listing.join(', ')} list app ${pathParam(req, 'appId')} in ProvisioningApps; remove it from them (PUT /api/v1/clients/{clientId}) before deleting the app`,
        });
      if (!(await deleteStoredApp(db, pathParam(req, 'appId'))))
        return sendProblem(res, notFound(pathParam(req, 'appId')));
      res.status(204).end();
    },
    /** Probes Try with a clearly marked transaction and a synthetic user, then cancels it. */
    probeProvisioningApp: async (req, res) => {
      const app = await findStoredApp(db, ring, pathParam(req, 'appId'));
      if (!app) return sendProblem(res, notFound(pathParam(req, 'appId')));
      const refused = callbackUrlProblem(app.callbackUrl, allow);
      if (refused) return sendProblem(res, refusedAddress(refused));
      res.json(await probeApp(http, app));
    },
  };
}
