import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, createServer, type Server as NetServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllowEntry, targetAllowed } from '../../../../../../sidecar/categories/computer/sandbox/allow-entry.js';
import { checkTarget, startNetworkProxy, type NetworkProxy } from '../../../../../../sidecar/categories/computer/sandbox/network-proxy.js';
import { parseSidecarArgs } from '../../../../../../sidecar/parse-sidecar-args.js';

describe('--network allow: entries', () => {
  it('parses host, host:port, globs, IPv4 and bracketed or bare IPv6', () => {
    expect(parseAllowEntry('Example.COM')).toEqual({ host: 'example.com' });
    expect(parseAllowEntry('db.internal:5432')).toEqual({ host: 'db.internal', port: 5432 });
    expect(parseAllowEntry('*.npmjs.org:443')).toEqual({ host: '*.npmjs.org', port: 443 });
    expect(parseAllowEntry('10.0.0.7:8080')).toEqual({ host: '10.0.0.7', port: 8080 });
    expect(parseAllowEntry('[::1]')).toEqual({ host: '::1' });
    expect(parseAllowEntry('[2001:db8::1]:8443')).toEqual({ host: '2001:db8::1', port: 8443 });
    expect(parseAllowEntry('2001:db8::1')).toEqual({ host: '2001:db8::1' });
    expect(() => parseAllowEntry('example.com:0')).toThrow(/not 1-65535/);
    expect(() => parseAllowEntry('example.com:70000')).toThrow(/not 1-65535/);
    expect(() => parseAllowEntry('[::1')).toThrow(/bracketed/);
  });

  it('matches host and port: no port allows 80 and 443 only, a port allows that port only', () => {
    expect(targetAllowed('example.com', 443, ['example.com'])).toBe(true);
    expect(targetAllowed('example.com', 80, ['example.com'])).toBe(true);
    expect(targetAllowed('example.com', 22, ['example.com'])).toBe(false);
    expect(targetAllowed('db.internal', 5432, ['db.internal:5432'])).toBe(true);
    expect(targetAllowed('db.internal', 443, ['db.internal:5432'])).toBe(false);
    // A bracketed IPv6 entry matches the address in any spelling (it never matched before).
    expect(targetAllowed('[::1]', 443, ['[::1]'])).toBe(true);
    expect(targetAllowed('0:0:0:0:0:0:0:1', 80, ['[::1]'])).toBe(true);
    expect(targetAllowed('::1', 8443, ['[::1]:8443'])).toBe(true);
  });

  it('refuses CONNECT to a port not listed, saying how to list it', async () => {
    expect(await checkTarget('127.0.0.1', ['127.0.0.1'], 22)).toMatchObject({ refused: expect.stringMatching(/port 22 of 127\.0\.0\.1 is not listed.*127\.0\.0\.1:22/) });
    expect(await checkTarget('127.0.0.1', ['127.0.0.1:22'], 22)).toEqual({ address: '127.0.0.1' });
  });

  it('checks each entry at start: a bad port is a usage error', () => {
    expect(() => parseSidecarArgs(['--workspace', '/', '--network', 'allow:example.com:99999'])).toThrow(/--network: the port of "example.com:99999" is not 1-65535/);
    expect(parseSidecarArgs(['--workspace', '/', '--network', 'allow:[::1]:8443,example.com']).config.sandbox?.network).toEqual({ mode: 'allow', hosts: ['[::1]:8443', 'example.com'] });
  });
});

/** Sends `text` on the proxy's socket; resolves everything the proxy answered until it closed. */
function exchange(proxy: NetworkProxy, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxy.socketPath);
    let answer = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      answer += chunk;
      if (answer.includes('200 Connection Established')) socket.end();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
    socket.write(text);
  });
}

describe('the allow: proxy', () => {
  let upstream: Server;
  let port: number;
  const seen: IncomingHttpHeaders[] = [];
  let tcp: NetServer;
  let tcpPort: number;
  let proxy: NetworkProxy;

  beforeAll(async () => {
    upstream = createHttpServer((request, response) => {
      seen.push(request.headers);
      response.end('upstream says hi');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    port = (upstream.address() as { port: number }).port;
    tcp = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    tcpPort = (tcp.address() as { port: number }).port;
    proxy = await startNetworkProxy({ hosts: [`127.0.0.1:${port}`], socat: '/bin/true' });
  });
  afterAll(async () => {
    await proxy?.close();
    upstream?.close();
    tcp?.close();
  });

  it('refuses a request to a listed address whose Host header names another site', async () => {
    const before = seen.length;
    const answer = await exchange(proxy, `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: admin.internal.corp\r\nConnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 403/);
    expect(answer).toContain('the Host header "admin.internal.corp" does not name the requested');
    expect(seen.length).toBe(before);
  });

  it('serves a listed host:port and sends the URL\'s own authority as Host', async () => {
    const answer = await exchange(proxy, `GET http://127.0.0.1:${port}/x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain('upstream says hi');
    expect(seen.at(-1)?.host).toBe(`127.0.0.1:${port}`);
  });

  it('refuses CONNECT to another port of a listed address, and tunnels to the listed one', async () => {
    expect(await exchange(proxy, `CONNECT 127.0.0.1:${tcpPort} HTTP/1.1\r\n\r\n`)).toMatch(/^HTTP\/1\.1 403 Forbidden[\s\S]*port \d+ of 127\.0\.0\.1 is not listed/);
    expect(await exchange(proxy, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`)).toMatch(/^HTTP\/1\.1 200 Connection Established/);
  });

  it('survives a CONNECT client that leaves while the name resolves (no uncaught EPIPE)', async () => {
    let release: () => void = () => {};
    const resolving = new Promise<void>((resolve) => (release = resolve));
    const slow = await startNetworkProxy({
      hosts: ['slow.example'],
      socat: '/bin/true',
      // Resolves, once the client is gone, to a private address: the proxy then answers 403 into a dead socket.
      resolveName: async () => {
        await resolving;
        return [{ address: '10.0.0.1' }];
      },
    });
    try {
      const socket: Socket = connect(slow.socketPath);
      socket.on('error', () => {});
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write('CONNECT slow.example:443 HTTP/1.1\r\n\r\n');
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.destroy();
      await new Promise((resolve) => socket.once('close', resolve));
      await new Promise((resolve) => setTimeout(resolve, 50));
      release();
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Still serving (an uncaught error would have failed the run and ended the process).
      expect(await exchange(slow, 'CONNECT other.example:443 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 403/);
    } finally {
      await slow.close();
    }
  });
});
