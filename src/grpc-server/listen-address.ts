import { isIP } from 'node:net';

/** The host of a listen address (`host:port`, `[v6]:port`, `dns:host:port`), or undefined for `unix:`. */
export function listenHost(address: string): string | undefined {
  if (address.startsWith('unix:') || address.startsWith('unix-abstract:')) return undefined;
  const bare = address.startsWith('dns:') ? address.slice(4).replace(/^\/\/[^/]*\//, '') : address;
  if (bare.startsWith('[')) return bare.slice(1, bare.indexOf(']'));
  const colon = bare.lastIndexOf(':');
  return colon === -1 ? bare : bare.slice(0, colon);
}

/** True for a unix socket or a loopback host (127.0.0.0/8, ::1, localhost). */
export function isLoopbackAddress(address: string): boolean {
  const host = listenHost(address);
  if (host === undefined) return true;
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}

/** The address actually bound: the given one with its port replaced by the real one. */
export function boundAddress(address: string, port: number): string {
  const host = listenHost(address);
  if (host === undefined) return address;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
