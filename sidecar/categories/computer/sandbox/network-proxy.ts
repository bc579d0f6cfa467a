import { lookup } from 'node:dns/promises';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, isIP, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { ToolRuntimeError } from '../../../../src/errors.js';
import { isPrivateAddress } from '../../../../src/private-address.js';
import type { ProxyEndpoint } from './bwrap-argv.js';
import { bare, hostAllowed, targetAllowed } from './allow-entry.js';

export { hostAllowed, parseAllowEntry, targetAllowed, type AllowEntry } from './allow-entry.js';

// Hand-written on node:http rather than a proxy library: the well-kept one (`proxy`, of the
// proxy-agents family) dials the target by name itself, so a check made before it cannot pin the
// address it connects to (a DNS answer that changes between the check and the dial reaches a
// private address), and its only refusal hook answers 407. Here the proxy resolves once, checks
// every address, and dials the checked one.

/** How long resolving and connecting to a target may take. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Resolves a name to its addresses (dns.lookup by default; tests inject a slow or fixed one). */
export type ResolveName = (host: string) => Promise<Array<{ address: string }>>;
const defaultResolve: ResolveName = (host) => lookup(host, { all: true });

/**
 * The address to dial for `host:port`, or why not: host and port must be listed; a private,
 * loopback or link-local address is refused unless the host was listed by that very address.
 */
export async function checkTarget(host: string, patterns: readonly string[], port: number, resolveName: ResolveName = defaultResolve): Promise<{ address: string } | { refused: string }> {
  const target = bare(host);
  if (!targetAllowed(target, port, patterns)) {
    const why = hostAllowed(target, patterns) ? `port ${port} of ${target} is not listed (an entry without a port allows 80 and 443; list ${target.includes(':') ? `[${target}]` : target}:${port} to allow it)` : `${target} is not listed`;
    return { refused: `${why} in --network allow:${patterns.join(',')}` };
  }
  if (isIP(target) !== 0) {
    // Listed by address: the operator named it, private or not.
    return { address: target };
  }
  let addresses: Array<{ address: string }>;
  try {
    addresses = await resolveName(target);
  } catch (error) {
    return { refused: `${target} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  const privateOne = addresses.find((entry) => isPrivateAddress(entry.address));
  if (privateOne) return { refused: `${target} resolves to ${privateOne.address}, a private, loopback or link-local address (list it by address to allow it)` };
  if (addresses.length === 0) return { refused: `${target} has no address` };
  return { address: addresses[0]!.address };
}

function refuse(response: ServerResponse, status: number, message: string): void {
  response.writeHead(status, { 'content-type': 'text/plain', connection: 'close' });
  response.end(`tools-runtime sandbox proxy: ${message}\n`);
}

/** Whether a Host header names the URL's host and port (the default port may be left out). */
function sameAuthority(header: string, url: URL): boolean {
  let named: URL;
  try {
    named = new URL(`http://${header.trim()}/`);
  } catch {
    return false;
  }
  return named.hostname === url.hostname && (named.port || '80') === (url.port || '80');
}

/** Plain HTTP through the proxy: `GET http://host/path`. */
async function forward(request: IncomingMessage, response: ServerResponse, patterns: readonly string[], resolveName: ResolveName): Promise<void> {
  let url: URL;
  try {
    url = new URL(request.url ?? '');
  } catch {
    return refuse(response, 400, 'expected an absolute http:// URL (use CONNECT for https)');
  }
  if (url.protocol !== 'http:') return refuse(response, 400, `${url.protocol} goes through CONNECT`);
  const port = Number(url.port || 80);
  // The Host header is what a virtual host routes by: a request for a listed address must not name
  // another site (`Host: admin.internal.corp`). One that names another is refused; the header sent
  // on is always the URL's own authority.
  const given = request.headers.host;
  if (given !== undefined && !sameAuthority(given, url)) {
    return refuse(response, 403, `the Host header ${JSON.stringify(given.slice(0, 200))} does not name the requested ${url.host}: a request may only reach the host it was checked for`);
  }
  const checked = await checkTarget(url.hostname, patterns, port, resolveName);
  if ('refused' in checked) return refuse(response, 403, checked.refused);
  const headers: Record<string, string | string[] | undefined> = { ...request.headers, host: url.host };
  delete headers['proxy-connection'];
  delete headers['proxy-authorization'];
  const outgoing = httpRequest({ host: checked.address, port, method: request.method, path: `${url.pathname}${url.search}`, headers, timeout: CONNECT_TIMEOUT_MS });
  outgoing.on('response', (upstream) => {
    response.writeHead(upstream.statusCode ?? 502, upstream.headers);
    upstream.pipe(response);
  });
  outgoing.on('timeout', () => outgoing.destroy(new Error('timed out')));
  outgoing.on('error', (error) => {
    if (!response.headersSent) refuse(response, 502, `${url.host}: ${error.message}`);
    else response.destroy();
  });
  request.pipe(outgoing);
}

/** HTTPS (or anything) through the proxy: `CONNECT host:port`, then bytes both ways. */
async function tunnel(request: IncomingMessage, client: Duplex, head: Buffer, patterns: readonly string[], resolveName: ResolveName): Promise<void> {
  // First, before any answer is written: a client that has gone (EPIPE, ECONNRESET) while the
  // target resolved must not become an uncaught error that ends the sidecar (issue 32, item 9).
  let clientGone = false;
  client.on('error', () => {
    clientGone = true;
    client.destroy();
  });
  client.once('close', () => (clientGone = true));
  const target = request.url ?? '';
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(target);
  const host = match ? (match[1] ?? match[2] ?? '') : '';
  const port = match ? Number(match[3]) : 0;
  const answer = (status: string, message: string): void => {
    if (clientGone || client.destroyed) return;
    client.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\ntools-runtime sandbox proxy: ${message}\n`);
  };
  if (!host || port <= 0 || port > 65_535) return answer('400 Bad Request', `CONNECT needs host:port (an IPv6 address in brackets), got ${JSON.stringify(target.slice(0, 200))}`);
  const checked = await checkTarget(host, patterns, port, resolveName);
  if ('refused' in checked) return answer('403 Forbidden', checked.refused);
  if (clientGone) return;
  const upstream: Socket = connect({ host: checked.address, port, timeout: CONNECT_TIMEOUT_MS });
  upstream.once('connect', () => {
    upstream.setTimeout(0);
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.once('timeout', () => upstream.destroy(new Error('timed out')));
  let connected = false;
  upstream.once('connect', () => (connected = true));
  upstream.on('error', (error) => {
    if (!connected) answer('502 Bad Gateway', `${target}: ${error.message}`);
    else client.destroy();
  });
  client.on('error', () => upstream.destroy());
  client.once('close', () => upstream.destroy());
}

/** A running proxy. */
export interface NetworkProxy extends ProxyEndpoint {
  close(): Promise<void>;
}

/**
 * Starts the proxy for `--network allow:HOSTS` on a Unix socket in a fresh 0700 folder (bound into
 * each sandbox, where socat bridges 127.0.0.1:3128 to it). HTTP requests and CONNECT tunnels go
 * to listed host and port pairs only (an entry without a port: 80 and 443); a private, loopback
 * or link-local target is refused unless listed by address; a plain HTTP request whose Host
 * header names another host is refused, and the Host sent on is the URL's. Refusals are 403 with
 * the reason in the body; a client that leaves before its answer costs nothing.
 *
 * @throws ToolRuntimeError `sandbox_unavailable` when socat is not installed.
 */
export async function startNetworkProxy(options: { hosts: readonly string[]; socat?: string; resolveName?: ResolveName }): Promise<NetworkProxy> {
  const resolveName = options.resolveName ?? defaultResolve;
  const socat = options.socat ?? findSocat();
  const folder = mkdtempSync(path.join(tmpdir(), 'tools-runtime-proxy-'));
  const socketPath = path.join(folder, 'proxy.sock');
  const server: Server = createServer((request, response) => {
    forward(request, response, options.hosts, resolveName).catch((error: unknown) => refuse(response, 500, String(error)));
  });
  server.on('connect', (request: IncomingMessage, client: Duplex, head: Buffer) => {
    tunnel(request, client, head, options.hosts, resolveName).catch(() => client.destroy());
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  server.unref();
  const cleanup = () => rmSync(folder, { recursive: true, force: true });
  process.once('exit', cleanup);
  return {
    socketPath,
    socat,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        process.off('exit', cleanup);
        cleanup();
      }),
  };
}

function findSocat(): string {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':').filter(Boolean)) {
    const candidate = path.join(dir, 'socat');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  throw new ToolRuntimeError('sandbox_unavailable', 'nothing was run: --network allow: needs socat inside the sandbox to reach the sidecar\'s proxy, and it is not installed. Fix: apt-get install socat, or choose --network off or on.');
}

const proxies = new Map<string, Promise<NetworkProxy>>();

/** The sidecar's one proxy for this host list, started on the first command that needs it. */
export function networkProxyFor(hosts: readonly string[]): Promise<NetworkProxy> {
  const key = hosts.join(',');
  let proxy = proxies.get(key);
  if (!proxy) {
    proxy = startNetworkProxy({ hosts });
    proxies.set(key, proxy);
    proxy.catch(() => proxies.delete(key));
  }
  return proxy;
}
