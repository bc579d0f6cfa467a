import { lookup } from 'node:dns/promises';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, isIP, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { ToolRuntimeError } from '../../../../src/index.js';
import { isPrivateAddress } from '../../../../src/private-address.js';
import type { ProxyEndpoint } from './bwrap-argv.js';

// Hand-written on node:http rather than a proxy library: the well-kept one (`proxy`, of the
// proxy-agents family) dials the target by name itself, so a check made before it cannot pin the
// address it connects to (a DNS answer that changes between the check and the dial reaches a
// private address), and its only refusal hook answers 407. Here the proxy resolves once, checks
// every address, and dials the checked one.

/** How long resolving and connecting to a target may take. */
const CONNECT_TIMEOUT_MS = 10_000;

/** A listed host: an exact name or address, or `*.suffix` for any name under it. */
export function hostAllowed(host: string, patterns: readonly string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((pattern) => (pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1 : name === pattern));
}

const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/**
 * The address to dial for `host`, or why not: the host must be listed; a private, loopback or
 * link-local address is refused unless the host was listed by that very address.
 */
export async function checkTarget(host: string, patterns: readonly string[]): Promise<{ address: string } | { refused: string }> {
  const target = bare(host);
  if (!hostAllowed(target, patterns)) return { refused: `${target} is not listed in --network allow:${patterns.join(',')}` };
  if (isIP(target) !== 0) {
    // Listed by address: the operator named it, private or not.
    return { address: target };
  }
  let addresses: Array<{ address: string }>;
  try {
    addresses = await lookup(target, { all: true });
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

/** Plain HTTP through the proxy: `GET http://host/path`. */
async function forward(request: IncomingMessage, response: ServerResponse, patterns: readonly string[]): Promise<void> {
  let url: URL;
  try {
    url = new URL(request.url ?? '');
  } catch {
    return refuse(response, 400, 'expected an absolute http:// URL (use CONNECT for https)');
  }
  if (url.protocol !== 'http:') return refuse(response, 400, `${url.protocol} goes through CONNECT`);
  const checked = await checkTarget(url.hostname, patterns);
  if ('refused' in checked) return refuse(response, 403, checked.refused);
  const headers = { ...request.headers };
  delete headers['proxy-connection'];
  delete headers['proxy-authorization'];
  const outgoing = httpRequest({ host: checked.address, port: Number(url.port || 80), method: request.method, path: `${url.pathname}${url.search}`, headers, timeout: CONNECT_TIMEOUT_MS });
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
async function tunnel(request: IncomingMessage, client: Duplex, head: Buffer, patterns: readonly string[]): Promise<void> {
  const target = request.url ?? '';
  const colon = target.lastIndexOf(':');
  const host = colon > 0 ? target.slice(0, colon) : '';
  const port = Number(target.slice(colon + 1));
  const answer = (status: string, message: string): void => {
    client.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\ntools-runtime sandbox proxy: ${message}\n`);
  };
  if (!host || !Number.isInteger(port) || port <= 0 || port > 65_535) return answer('400 Bad Request', `CONNECT needs host:port, got ${JSON.stringify(target)}`);
  const checked = await checkTarget(host, patterns);
  if ('refused' in checked) return answer('403 Forbidden', checked.refused);
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
  upstream.once('error', (error) => {
    if (!connected) answer('502 Bad Gateway', `${target}: ${error.message}`);
    else client.destroy();
  });
  client.once('error', () => upstream.destroy());
  client.once('close', () => upstream.destroy());
}

/** A running proxy. */
export interface NetworkProxy extends ProxyEndpoint {
  close(): Promise<void>;
}

/**
 * Starts the proxy for `--network allow:HOSTS` on a Unix socket in a fresh 0700 folder (bound into
 * each sandbox, where socat bridges 127.0.0.1:3128 to it). HTTP requests and CONNECT tunnels go
 * to listed hosts only; a private, loopback or link-local target is refused unless listed by
 * address. Refusals are 403 with the reason in the body.
 *
 * @throws ToolRuntimeError `sandbox_unavailable` when socat is not installed.
 */
export async function startNetworkProxy(options: { hosts: readonly string[]; socat?: string }): Promise<NetworkProxy> {
  const socat = options.socat ?? findSocat();
  const folder = mkdtempSync(path.join(tmpdir(), 'tools-runtime-proxy-'));
  const socketPath = path.join(folder, 'proxy.sock');
  const server: Server = createServer((request, response) => {
    forward(request, response, options.hosts).catch((error: unknown) => refuse(response, 500, String(error)));
  });
  server.on('connect', (request: IncomingMessage, client: Duplex, head: Buffer) => {
    tunnel(request, client, head, options.hosts).catch(() => client.destroy());
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
