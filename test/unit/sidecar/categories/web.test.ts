import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isToolRuntimeError } from '../../../../src/index.js';
import type { WebFetchProfile, WebSearchProfile } from '../../../../sidecar/categories/web/web-profiles.js';
import { createWebTools } from '../../../../sidecar/categories/web.js';
import { isPrivateAddress } from '../../../../sidecar/categories/web/address-guard.js';
import { httpGet } from '../../../../sidecar/categories/web/http-get.js';
import { callTool, toolNamed } from './tool-harness.js';

interface Recorded {
  url: string;
  headers: IncomingMessage['headers'];
}

async function startServer(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<{ server: Server; base: string; seen: Recorded[] }> {
  const seen: Recorded[] = [];
  const server = createServer((request, response) => {
    seen.push({ url: request.url ?? '', headers: request.headers });
    handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

const fetchProfile = (allowPrivateNetwork: boolean): WebFetchProfile => ({ allowPrivateNetwork, maxRedirects: 3, maxBytes: 1_000_000, timeoutMs: 5_000, userAgent: 'sidecar-test' });

describe('address guard', () => {
  it('classifies private, loopback, link-local and mapped addresses', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', 'not-an-ip']) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });
});

describe('web_fetch', () => {
  let site: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    site = await startServer((request, response) => {
      if (request.url === '/page') {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip' });
        response.end(
          gzipSync('<html><head><title>Test &amp; Page</title><style>.x{}</style></head><body><nav>MENU</nav><h1>Hello</h1><p>Some <b>bold</b> text.</p><script>alert(1)</script></body></html>'),
        );
      } else if (request.url === '/data.json') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"a":1}');
      } else if (request.url === '/redirect-private') {
        response.writeHead(302, { location: `http://127.0.0.2:${(site.server.address() as AddressInfo).port}/page` });
        response.end();
      } else if (request.url === '/redirect-local') {
        response.writeHead(302, { location: '/page' });
        response.end();
      } else if (request.url === '/loop') {
        response.writeHead(302, { location: '/loop' });
        response.end();
      } else {
        response.writeHead(404).end('missing');
      }
    });
  });
  afterAll(() => close(site.server));

  it('turns HTML into markdown without noise, takes the title, passes JSON through', async () => {
    const [fetchTool] = createWebTools({ webFetch: fetchProfile(true) });
    const page = await callTool(fetchTool!, { url: `${site.base}/redirect-local` });
    expect(page.text).toContain('Title: Test & Page');
    expect(page.text).toContain('# Hello');
    expect(page.text).toContain('Some **bold** text.');
    expect(page.text).not.toMatch(/MENU|alert|\.x\{\}/);
    expect(site.seen.at(-1)?.headers['user-agent']).toBe('sidecar-test');
    const json = await callTool(fetchTool!, { url: `${site.base}/data.json` });
    expect(json.text).toContain('{"a":1}');
    await expect(callTool(fetchTool!, { url: 'file:///etc/passwd' })).rejects.toThrow(/only http and https/);
    await expect(callTool(fetchTool!, { url: `${site.base}/loop` })).rejects.toThrow(/too many redirects/);
  });

  it('refuses loopback by IP literal and after DNS resolution when the profile does not allow it', async () => {
    const [fetchTool] = createWebTools({ webFetch: fetchProfile(false) });
    const before = site.seen.length;
    for (const url of [`${site.base}/page`, `http://localhost:${(site.server.address() as AddressInfo).port}/page`, 'http://[::ffff:127.0.0.1]/']) {
      const error = await callTool(fetchTool!, { url }).catch((e: unknown) => e);
      expect(isToolRuntimeError(error, 'tool_failed'), String(error)).toBe(true);
      expect((error as Error).message).toMatch(/refused to connect/);
    }
    expect(site.seen.length).toBe(before);
  });

  it('checks again on every redirect: a redirect to a private address is refused', async () => {
    // Treat the test server's own address as public so that only the redirect's target is private.
    const isBlocked = (address: string) => address !== '127.0.0.1' && isPrivateAddress(address);
    const common = { signal: AbortSignal.timeout(5_000), timeoutMs: 5_000, maxBytes: 100_000, maxRedirects: 3, isBlocked };
    const refused = await httpGet({ ...common, url: `${site.base}/redirect-private`, allowPrivateNetwork: false }).catch((e: unknown) => e);
    expect((refused as Error).message).toMatch(/refused to connect to 127\.0\.0\.2/);
    const allowed = await httpGet({ ...common, url: `${site.base}/redirect-local`, allowPrivateNetwork: false });
    expect(allowed.status).toBe(200);
    expect(allowed.redirects).toBe(1);
  });
});

describe('web_search', () => {
  it('queries a SearXNG-shaped server and a Brave-shaped one', async () => {
    const searx = await startServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://x');
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ results: [{ title: `About ${url.searchParams.get('q')}`, url: 'https://example.org/a', content: 'first <b>hit</b>' }, { title: 'B', url: 'https://example.org/b', content: 'second' }] }));
    });
    const brave = await startServer((request, response) => {
      if (request.headers['x-subscription-token'] !== 'key-1') {
        response.writeHead(401).end('bad token');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ web: { results: [{ title: 'Brave hit', url: 'https://example.com/', description: 'from brave' }] } }));
    });
    try {
      const searxProfile: WebSearchProfile = { provider: 'searxng', url: searx.base, timeoutMs: 5_000, maxResults: 10, allowPrivateNetwork: true };
      const tools = createWebTools({ webSearch: searxProfile });
      expect(tools.map((t) => t.name)).toEqual(['web_search']);
      const found = await callTool(tools[0]!, { query: 'grpc sidecar', count: 1 });
      expect(found.text).toBe('1. About grpc sidecar\n   https://example.org/a\n   first hit');
      expect(searx.seen[0]?.url).toBe('/search?q=grpc+sidecar&format=json');

      const braveProfile: WebSearchProfile = { provider: 'brave', url: `${brave.base}/res/v1/web/search`, apiKey: 'key-1', timeoutMs: 5_000, maxResults: 10, allowPrivateNetwork: true };
      const braveTool = toolNamed(createWebTools({ webSearch: braveProfile }), 'web_search');
      const braveFound = await callTool(braveTool, { query: 'q' });
      expect(braveFound.text).toContain('Brave hit\n   https://example.com/\n   from brave');
      const wrongKey = toolNamed(createWebTools({ webSearch: { ...braveProfile, apiKey: 'nope' } }), 'web_search');
      await expect(callTool(wrongKey, { query: 'q' })).rejects.toThrow(/HTTP 401/);
    } finally {
      await close(searx.server);
      await close(brave.server);
    }
  });

  it('offers no web tool when no profile is configured', () => {
    expect(createWebTools({})).toEqual([]);
  });
});
