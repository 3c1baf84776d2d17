import type { Client } from '@temporalio/client';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { payloadCodecOf } from '../../platform/temporal/data-converter';
import type { AppConfig } from '../../platform/config/config-schema';

/** The codec of a service configuration, to read its histories as the codec endpoint would show them. */
export const codecOf = (config: AppConfig) => payloadCodecOf(config)!;

export const isPayload = (value: object): value is Payload =>
  'data' in value && value.data instanceof Uint8Array && 'metadata' in value;

/**
 * Everything a history holds as text, payload bytes decoded as UTF-8: as it is stored on the server (and shown by a
 * UI without the codec), or, with `codec`, with every payload opened first.
 */
export async function historyText(client: Client, workflowId: string, codec?: PayloadCodec): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const parts: string[] = [];
  const walk = async (value: unknown): Promise<void> => {
    if (value && typeof value === 'object' && codec && isPayload(value)) value = (await codec.decode([value]))[0];
    if (value instanceof Uint8Array) parts.push(Buffer.from(value).toString('utf8'));
    else if (Array.isArray(value)) for (const item of value) await walk(item);
    else if (value && typeof value === 'object') for (const item of Object.values(value)) await walk(item);
    else if (value !== undefined && value !== null) parts.push(`${value as string | number | boolean | bigint}`);
  };
  await walk(history);
  return parts.join('\n');
}

/** A payload's JSON value, opened with the codec. */
export async function payloadValue(codec: PayloadCodec, payload: Payload): Promise<unknown> {
  const [opened] = await codec.decode([payload]);
  return JSON.parse(Buffer.from(opened.data!).toString('utf8'));
}
