import ipaddr from 'ipaddr.js';

/** An entry of Api:TrustedProxies: an IPv4 or IPv6 address, or a CIDR range. */
export function isAddressOrCidr(entry: string): boolean {
  if (entry.includes('/')) {
    try {
      ipaddr.parseCIDR(entry);
      return true;
    } catch {
      return false;
    }
  }
  return ipaddr.isValid(entry);
}

/**
 * Express's `trust proxy` setting for Api:TrustedProxies: the listed addresses and ranges, or nothing trusted (then
 * req.ip is the connection's own peer, whatever X-Forwarded-For says).
 */
export const trustProxySetting = (trusted: readonly string[]): string[] | false =>
  trusted.length > 0 ? [...trusted] : false;
