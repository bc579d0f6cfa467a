import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { ToolRuntimeError } from '../../../src/index.js';

// Addresses a fetch must not reach unless the profile allows the private network. BlockList
// matches IPv4-mapped IPv6 (::ffff:a.b.c.d) against the IPv4 rules itself.
const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['::', 96], // IPv4-compatible (deprecated): may embed a private IPv4
  ['64:ff9b::', 96], // NAT64: may embed a private IPv4
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/**
 * True for an address a fetch may not reach without `allowPrivateNetwork`: private, loopback,
 * link-local, carrier-grade NAT, unspecified, documentation, multicast and reserved ranges of IPv4
 * and IPv6, including IPv4-mapped IPv6. Anything that is not an IP address counts as private.
 */
export function isPrivateAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 0) return true;
  return blocked.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

function refused(host: string, address: string): ToolRuntimeError {
  return new ToolRuntimeError(
    'tool_failed',
    `refused to connect to ${host} (${address}): private, loopback and link-local addresses are not allowed by the web_fetch profile`,
  );
}

/** Checks a URL's host when it is an IP literal (those skip DNS, so `lookup` never sees them). */
export function checkLiteralHost(hostname: string, allowPrivateNetwork: boolean, isBlocked: (address: string) => boolean = isPrivateAddress): void {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (isIP(bare) !== 0 && !allowPrivateNetwork && isBlocked(bare)) throw refused(hostname, bare);
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http/https requests that resolves the host, checks *every* address it gets and
 * hands the connection only checked addresses, so DNS rebinding between a check and the connect
 * cannot slip through. Fails the connection with a ToolRuntimeError when any address is private
 * (unless allowed). `isBlocked` defaults to isPrivateAddress (tests narrow it).
 */
export function createGuardedLookup(allowPrivateNetwork: boolean, isBlocked: (address: string) => boolean = isPrivateAddress) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, []);
      if (addresses.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      if (!allowPrivateNetwork) {
        const bad = addresses.find((entry) => isBlocked(entry.address));
        if (bad) return callback(refused(hostname, bad.address) as NodeJS.ErrnoException, []);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      return callback(null, first.address, first.family);
    });
  };
}
