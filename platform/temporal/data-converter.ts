import { randomBytes } from 'node:crypto';
import { Client, type ConnectionLike } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { AppConfig } from '../config/config-schema';
import { payloadKeyRingFromConfig, requirePayloadKeyRing } from '../config/key-ring';
import { PayloadEncryptionCodec } from '../security/payload-encryption';

/** The failure converter's module; workflow bundles are built with it too (the sandbox encodes failures itself). */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

/**
 * What every client and worker of the service hands Temporal: payloads sealed under Temporal:PayloadKeys, failures'
 * messages and stack traces inside them. The API, the worker, the migration CLI and the hosted runner share it.
 */
export function temporalDataConverter(config: AppConfig): DataConverter {
  const codec = new PayloadEncryptionCodec(requirePayloadKeyRing(config));
  return { payloadCodecs: [codec], failureConverterPath: FAILURE_CONVERTER_PATH };
}

/** The codec of Temporal:PayloadKeys; undefined when none is configured. */
export function payloadCodecOf(config: AppConfig): PayloadEncryptionCodec | undefined {
  const ring = payloadKeyRingFromConfig(config);
  return ring && new PayloadEncryptionCodec(ring);
}

export function temporalClient(connection: ConnectionLike, config: AppConfig): Client {
  return new Client({ connection, namespace: config.Temporal.Namespace, dataConverter: temporalDataConverter(config) });
}

/** For a Temporal server that lives only as long as this process (the migration CLI's own): a key nobody keeps. */
export function withEphemeralPayloadKey(config: AppConfig): AppConfig {
  const key = randomBytes(32);
  return {
    ...config,
    Temporal: { ...config.Temporal, PayloadKeys: [{ Id: 'ephemeral', Key: key.toString('base64') }] },
  };
}
