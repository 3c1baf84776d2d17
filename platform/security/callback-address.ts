import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';

/**
 * The one place that decides whether a provisioning app's CallbackUrl may be called.
 * The same policy runs when a URL is written (config load, admin API) and again at connect time,
 * after DNS resolution, so a name that later resolves to an internal address is still refused.
 */
export interface AllowList {
  hostNames: ReadonlySet<string>;
  /** IPs and CIDRs, in the form request-filtering-agent matches after DNS resolution. */
  addresses: readonly string[];
}

export class RefusedAddressError extends Error {
  readonly code = 'REFUSED_ADDRESS';
}

const REFUSED_NAME_SUFFIXES = ['.internal', '.local'];

/**
 * IPv4-compatible IPv6 (`::a.b.c.d`, RFC 4291 §2.5.5.1, deprecated): ipaddr.js calls these "unicast", yet some
 * stacks route `::127.0.0.1` to the IPv4 address inside. `::` and `::1` are in it too, and refused as well.
 */
const IPV4_COMPATIBLE = '::/96';
const isIpv4Compatible = (address: ipaddr.IPv4 | ipaddr.IPv6) =>
  address.kind() === 'ipv6' && address.match(ipaddr.parseCIDR(IPV4_COMPATIBLE));

export function parseAllowList(entries: readonly string[]): AllowList {
  const hostNames = new Set<string>();
  const addresses: string[] = [];
  for (const raw of entries) {
    const entry = raw
      .trim()
      .toLowerCase()
      .replace(/^\[(.*)\]$/, '$1');
    if (net.isIP(entry) !== 0) {
      addresses.push(ipaddr.process(entry).toString());
    } else if (entry.includes('/')) {
      ipaddr.parseCIDR(entry);
      addresses.push(entry);
    } else if (/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/.test(entry)) {
      hostNames.add(entry.replace(/\.$/, ''));
    } else {
      throw new Error(`not a host name: ${entry}`);
    }
  }
  return { hostNames, addresses };
}

export function describeAllowListEntryProblem(entry: string): string | undefined {
  try {
    parseAllowList([entry]);
    return undefined;
  } catch {
    return `"${entry}" is neither a host name, an IP address nor a CIDR range`;
  }
}

function addressIsAllowed(address: ipaddr.IPv4 | ipaddr.IPv6, allow: AllowList): boolean {
  const text = address.toString();
  return allow.addresses.some((entry) => (entry.includes('/') ? matchesCidr(address, entry) : entry === text));
}

function matchesCidr(address: ipaddr.IPv4 | ipaddr.IPv6, cidr: string): boolean {
  const parsed = ipaddr.parseCIDR(cidr);
  return address.kind() === parsed[0].kind() && address.match(parsed);
}

/**
 * Checks a URL before any connection: syntax, scheme, refused host names, and literal IPs in any
 * spelling (the WHATWG parser already turns `2130706433` or `0x7f.1` into `127.0.0.1`).
 * Returns the reason for a refusal, or undefined when the URL may be called.
 */
export function callbackUrlProblem(value: string, allow: AllowList): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return `uses ${url.protocol} (only http and https are allowed)`;
  if (url.username || url.password) return 'must not carry credentials in the URL';
  const host = url.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (allow.hostNames.has(host)) return undefined;
  // What an operator with an app inside their own network does about a refusal.
  const allowable = (reason: string) =>
    `${reason}; if the app runs inside your own network, list ${host} in Auth:AllowedInternalTargets`;
  if (net.isIP(host) !== 0) {
    const address = ipaddr.parse(host);
    if (addressIsAllowed(address, allow)) return undefined;
    const range = address.range();
    if (range !== 'unicast') return allowable(`targets ${host}, a ${range} address that is not publicly routable`);
    if (isIpv4Compatible(address))
      return `targets ${host}, an IPv4-compatible IPv6 address, which is deprecated and not publicly routable`;
    return undefined;
  }
  // One trailing dot is the fully-qualified spelling; more, or an empty label anywhere, is no host name at all.
  const name = host.replace(/\.$/, '');
  if (name.split('.').some((label) => label === ''))
    return `targets ${host}, which is not a valid host name (empty label)`;
  if (name === 'localhost' || name.endsWith('.localhost')) return allowable(`targets ${host}, a loopback name`);
  if (REFUSED_NAME_SUFFIXES.some((suffix) => name.endsWith(suffix)))
    return allowable(`targets ${host}, an internal name`);
  return undefined;
}

/** Whether an address, as a socket reports it (IPv4, IPv6, IPv4-mapped IPv6), is a loopback one. */
export function isLoopbackAddress(text: string | undefined): boolean {
  return text !== undefined && net.isIP(text) !== 0 && ipaddr.process(text).range() === 'loopback';
}

/** Whether a configured host is this machine by its very spelling: a loopback IP, `localhost` or a name under it. */
export function isLoopbackHost(host: string): boolean {
  const name = host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || isLoopbackAddress(name);
}

export function assertCallableUrl(value: string, allow: AllowList): URL {
  const problem = callbackUrlProblem(value, allow);
  if (problem) throw new RefusedAddressError(`CallbackUrl ${problem}`);
  return new URL(value);
}

/** got options of every request to a configured address: one attempt, no redirect followed, any status answered. */
export const ONE_ATTEMPT = { retry: { limit: 0 }, followRedirect: false, throwHttpErrors: false };

export interface GuardedAgents {
  /** Agents for got's `agent` option; names on the allow-list skip the at-connect check. */
  forUrl(url: URL): { http: http.Agent; https: https.Agent };
  destroy(): void;
}

/** Keep-alive agents, so repeated calls to the same app reuse their connections. */
export function createGuardedAgents(allow: AllowList): GuardedAgents {
  const options = {
    keepAlive: true,
    maxSockets: 64,
    allowIPAddressList: [...allow.addresses],
    denyIPAddressList: [IPV4_COMPATIBLE],
  };
  const filtered = { http: new RequestFilteringHttpAgent(options), https: new RequestFilteringHttpsAgent(options) };
  const trusted = {
    http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
    https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
  };
  return {
    forUrl(url) {
      const host = url.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
      return allow.hostNames.has(host) ? trusted : filtered;
    },
    destroy() {
      for (const agent of [filtered.http, filtered.https, trusted.http, trusted.https]) agent.destroy();
    },
  };
}
