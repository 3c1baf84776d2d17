import { randomUUID } from 'node:crypto';
import type { TccClient } from '../apps/tcc-client';
import type { ProvisioningApp } from '../store/provisioning-apps';

/**
 * Probes Try with a clearly marked transaction and a synthetic user, then cancels it (counted as a probe, not as
 * provisioning): the answer an operator sees.
 */
export async function probeApp(http: TccClient, app: ProvisioningApp) {
  const id = randomUUID();
  const transactionId = `probe:${id}`;
  const probe = await http.probe(app, {
    transactionId,
    userId: `probe-${id}`,
    email: `provisioning-probe-${id}@example.invalid`,
    firstName: 'Provisioning',
    lastName: 'Probe',
  });
  return {
    appId: app.appId,
    transactionId,
    reachable: probe.status !== undefined,
    status: probe.status ?? null,
    latencyMs: probe.latencyMs,
    approved: probe.verdict.approved,
    reason: probe.verdict.approved ? null : probe.verdict.reason,
    cancelled: probe.cancelled,
  };
}
