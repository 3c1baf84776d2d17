import type { IncomingMessage } from 'node:http';

/**
 * The bearer credential of a request, or undefined. Only the request's own header counts: a value inherited
 * through a polluted prototype (`Object.prototype.authorization`) must never authenticate anyone.
 */
export function bearerToken(req: IncomingMessage): string | undefined {
  if (!Object.hasOwn(req.headers, 'authorization')) return undefined;
  const header = req.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer[ \t]+(\S.*)$/i.exec(header);
  return match ? match[1].trim() : undefined;
}
