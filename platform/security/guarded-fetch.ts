import got from 'got';
import { assertCallableUrl, createGuardedAgents, ONE_ATTEMPT, type AllowList } from './callback-address';

/** What openid-client hands its fetch: the Fetch API's options, as far as it uses them. */
export interface FetchOptions {
  method?: string;
  headers?: ConstructorParameters<typeof Headers>[0];
  body?: string | URLSearchParams | null;
  signal?: AbortSignal | null;
}

export type GuardedFetch = ((url: string, options?: FetchOptions) => Promise<Response>) & { close(): void };

/**
 * A fetch for server-side requests to addresses someone configured (an upstream identity provider's authority and
 * every endpoint its discovery document names): the callback-address rule before the request and again at connect
 * time, as for app callbacks; no redirects followed; a 10-second limit.
 */
export function createGuardedFetch(allow: AllowList, timeoutMs = 10_000): GuardedFetch {
  const agents = createGuardedAgents(allow);
  const guarded = async (url: string, options: FetchOptions = {}): Promise<Response> => {
    const target = assertCallableUrl(url, allow);
    const requestHeaders: Record<string, string> = {};
    new Headers(options.headers ?? {}).forEach((value, name) => (requestHeaders[name] = value));
    const response = await got(target, {
      method: (options.method ?? 'GET') as 'GET',
      headers: requestHeaders,
      body: options.body === null || options.body === undefined ? undefined : String(options.body),
      agent: agents.forUrl(target),
      signal: options.signal ?? undefined,
      timeout: { request: timeoutMs },
      ...ONE_ATTEMPT,
      responseType: 'buffer',
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers))
      for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one);
    const body = response.statusCode === 204 ? null : new Uint8Array(response.body);
    return new Response(body, { status: response.statusCode, headers });
  };
  return Object.assign(guarded, { close: () => agents.destroy() });
}
