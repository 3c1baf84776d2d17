import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { deprovisioningRetries } from '../../../platform/observability/metrics';
import type { UserProfile } from '../../../platform/store/users';
import type { AppProvider, ProvisioningApp } from '../../apps/app-providers';
import type { TccClient, TryRequestBody } from '../../apps/tcc-client';
import type { TryVerdict } from '../../tcc';

/** What the calls to one app need: the client that speaks TCC and the provider that knows the app. */
export interface AppCallDependencies {
  http: TccClient;
  apps: AppProvider;
}

/** Omits nulls and an empty attribute map, as the spec's Try body table asks. */
export function buildTryBody(transactionId: string, user: UserProfile): TryRequestBody {
  const body: TryRequestBody = { transactionId, userId: user.userId, email: user.email };
  if (user.firstName != null) body.firstName = user.firstName;
  if (user.lastName != null) body.lastName = user.lastName;
  if (user.organizationId != null) body.organizationId = user.organizationId;
  if (Object.keys(user.customAttributes).length > 0) body.customAttributes = user.customAttributes;
  return body;
}

/** An app removed from the configuration while an attempt ran cannot be called: retrying would not bring it back. */
async function configuredApp(apps: AppProvider, appId: string): Promise<ProvisioningApp> {
  const found = await apps.getApp(appId);
  if (!found) throw ApplicationFailure.nonRetryable(`provisioning app ${appId} is not configured`, 'UnknownApp');
  return found;
}

export async function tryApp(
  { http, apps }: AppCallDependencies,
  input: { appId: string; transactionId: string; user: UserProfile },
): Promise<TryVerdict> {
  const found = await configuredApp(apps, input.appId);
  const verdict = await http.try(found, buildTryBody(input.transactionId, input.user));
  if (!verdict.approved) {
    log.info('Try not approved', { appId: found.appId, transactionId: input.transactionId, reason: verdict.reason });
  }
  return verdict;
}

export async function confirmApp(
  { http, apps }: AppCallDependencies,
  input: { appId: string; transactionId: string },
): Promise<void> {
  await http.confirm(await configuredApp(apps, input.appId), input.transactionId);
}

export async function cancelApp(
  { http, apps }: AppCallDependencies,
  input: { appId: string; transactionId: string },
): Promise<void> {
  await http.cancel(await configuredApp(apps, input.appId), input.transactionId);
}

export async function deprovisionApp(
  { http, apps }: AppCallDependencies,
  input: { appId: string; userId: string },
): Promise<void> {
  if (Context.current().info.attempt > 1) deprovisioningRetries.inc({ app: input.appId });
  await http.deleteUser(await configuredApp(apps, input.appId), input.userId);
}
