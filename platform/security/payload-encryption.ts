import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { openBytes, sealBytes, type KeyRing } from './data-protection';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** The metadata entry naming the key a payload was sealed with, so older keys still open older payloads. */
export const KEY_ID_METADATA = 'encryption-key-id';

const text = (value: string) => new TextEncoder().encode(value);
const fromBytes = (value: Uint8Array | null | undefined) => (value ? new TextDecoder().decode(value) : undefined);

export class PayloadKeyMissingError extends Error {
  constructor(readonly keyId: string) {
    super(`a payload is sealed with payload key ${keyId}, which is not in Temporal:PayloadKeys`);
  }
}

/**
 * Seals every payload the service hands to Temporal with AES-256-GCM (the whole payload, its metadata included, so
 * even the encoding says nothing), under the first key of the ring. Payloads written before encryption existed pass
 * through decoding unchanged.
 */
export class PayloadEncryptionCodec implements PayloadCodec {
  constructor(private readonly ring: KeyRing) {}

  // Promises built from executors, so a payload that cannot be opened rejects rather than throws.
  encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.ring.primary;
    return new Promise((resolve) =>
      resolve(
        payloads.map((payload) => ({
          metadata: { [METADATA_ENCODING_KEY]: text(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: text(id) },
          data: sealBytes(temporal.api.common.v1.Payload.encode(payload).finish(), key),
        })),
      ),
    );
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    return new Promise((resolve) =>
      resolve(
        payloads.map((payload) => {
          if (fromBytes(payload.metadata?.[METADATA_ENCODING_KEY]) !== ENCRYPTED_ENCODING) return payload;
          const keyId = fromBytes(payload.metadata?.[KEY_ID_METADATA]) ?? '';
          const key = this.ring.keys.get(keyId);
          if (!key) throw new PayloadKeyMissingError(keyId);
          return temporal.api.common.v1.Payload.decode(openBytes(payload.data ?? new Uint8Array(), key));
        }),
      ),
    );
  }
}
