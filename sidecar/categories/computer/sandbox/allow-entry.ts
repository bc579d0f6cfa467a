import { isIP } from 'node:net';

// The `--network allow:` entries, apart from the proxy so the flag parser checks them at start
// without loading node:http (the proxy starts at the first command that needs it).

/**
 * One `--network allow:` entry: a host (name, `*.suffix` glob, IPv4 or IPv6 address, lower case,
 * IPv6 without brackets) and the port it allows. Without a port an entry allows 80 and 443 only:
 * the web, which is what a host listed by name is for; another port must be named
 * (`db.internal:5432`), so a listed host is not every service on it (`CONNECT host:22`).
 */
export interface AllowEntry {
  host: string;
  port?: number;
}

/** The ports an entry without a port allows. */
export const DEFAULT_ALLOWED_PORTS: readonly number[] = [80, 443];

/**
 * Parses an allow entry: `host`, `host:port`, `*.suffix[:port]`, `1.2.3.4[:port]`, `[v6]`,
 * `[v6]:port`, or a bare IPv6 address (no port then: its colons are the address's).
 *
 * @throws Error naming the entry when its port is not 1-65535 or its host is empty or malformed.
 */
export function parseAllowEntry(text: string): AllowEntry {
  const entry = text.trim().toLowerCase();
  let host = entry;
  let portText: string | undefined;
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d*))?$/.exec(entry);
  if (bracketed) {
    host = bracketed[1]!;
    portText = bracketed[2];
  } else if (entry.startsWith('[')) {
    throw new Error(`not a bracketed IPv6 address: ${JSON.stringify(text)} (expected [ADDRESS] or [ADDRESS]:PORT)`);
  } else if (isIP(entry) !== 6 && entry.includes(':')) {
    const colon = entry.lastIndexOf(':');
    host = entry.slice(0, colon);
    portText = entry.slice(colon + 1);
  }
  host = host.replace(/\.$/, '');
  if (host === '' || (host.includes(':') && isIP(host) !== 6)) throw new Error(`not a host, *.glob or address: ${JSON.stringify(text)}`);
  if (portText === undefined) return { host };
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port < 1 || port > 65_535) throw new Error(`the port of ${JSON.stringify(text)} is not 1-65535`);
  return { host, port };
}

const parsedEntries = new Map<string, AllowEntry>();
const entryOf = (pattern: string) => {
  let entry = parsedEntries.get(pattern);
  if (!entry) parsedEntries.set(pattern, (entry = parseAllowEntry(pattern)));
  return entry;
};

/** An IPv6 address in one spelling (`::1` and `0:0::1` compare equal); anything else unchanged. */
const canonicalHost = (host: string) => {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (isIP(name) !== 6) return name;
  try {
    return new URL(`http://[${name}]/`).hostname.slice(1, -1);
  } catch {
    return name;
  }
};

const hostMatches = (host: string, pattern: string) =>
  pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1 : host === canonicalHost(pattern);

/** A listed host, whatever port its entry names: an exact name or address, or `*.suffix` for any name under it. */
export function hostAllowed(host: string, patterns: readonly string[]): boolean {
  const name = canonicalHost(bare(host));
  return patterns.some((pattern) => hostMatches(name, entryOf(pattern).host));
}

/** Whether `host:port` is listed: host and port both match one entry (no port: 80 and 443). */
export function targetAllowed(host: string, port: number, patterns: readonly string[]): boolean {
  const name = canonicalHost(bare(host));
  return patterns.some((pattern) => {
    const entry = entryOf(pattern);
    return hostMatches(name, entry.host) && (entry.port === undefined ? DEFAULT_ALLOWED_PORTS.includes(port) : entry.port === port);
  });
}

/** A host without the brackets of an IPv6 literal. */
export const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
