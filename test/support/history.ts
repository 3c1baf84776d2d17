import type { Client } from '@temporalio/client';

/** Everything a history holds as text, payload bytes decoded, as an operator would read it in the UI. */
export async function historyText(client: Client, workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const parts: string[] = [];
  const walk = (value: unknown): void => {
    if (value instanceof Uint8Array) parts.push(Buffer.from(value).toString('utf8'));
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
    else if (value !== undefined && value !== null) parts.push(`${value as string | number | boolean | bigint}`);
  };
  walk(history);
  return parts.join('\n');
}
