/** Which addresses count as private: one list for the web tools' fetches and the sandbox's network proxy. */
import { BlockList, isIP } from 'node:net';

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
 * True for an address a fetch (or the sandbox's proxy) may not reach without `allowPrivateNetwork`: private, loopback,
 * link-local, carrier-grade NAT, unspecified, documentation, multicast and reserved ranges of IPv4
 * and IPv6, including IPv4-mapped IPv6. Anything that is not an IP address counts as private.
 */
export function isPrivateAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 0) return true;
  return blocked.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}
