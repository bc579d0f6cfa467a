import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { ToolRuntimeError } from '../../../src/index.js';
import { isPrivateAddress } from '../../../src/private-address.js';

export { isPrivateAddress } from '../../../src/private-address.js';

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
