import { connect } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { startMcpHttpListener, type McpHttpListener } from '../../../../sidecar/mcp/mcp-http-listener.js';
import { defaultSidecarLimits } from '../../../../sidecar/sidecar-limits.js';
import { silentLogger } from '../../../../src/index.js';
import { createFixtureCatalogs } from '../../../fixtures/fixture-categories.js';

const TOKEN = 'listener-token';

function listen(extra: { sessionIdleMs?: number; maxSessions?: number } = {}): Promise<McpHttpListener> {
  return startMcpHttpListener({
    catalogs: createFixtureCatalogs(),
    config: { workspace: '/tmp', stateDir: '/tmp/mcp-http-state', commandEnv: {}, commandEnvAllowList: [], limits: defaultSidecarLimits },
    logger: silentLogger,
    agentId: 'mcp',
    approvalPolicy: { mode: 'none', toolNames: [] },
    address: '127.0.0.1:0',
    token: TOKEN,
    maxBodyBytes: 1024 * 1024,
    ...extra,
  });
}

async function session(listener: McpHttpListener): Promise<{ client: Client; id: string }> {
  const transport = new StreamableHTTPClientTransport(new URL(listener.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
  const client = new Client({ name: 'test', version: '1' }, { capabilities: {} });
  await client.connect(transport);
  return { client, id: transport.sessionId! };
}

/** A request on an existing session: its HTTP status (404 once the session has ended). */
async function statusOf(listener: McpHttpListener, id: string): Promise<number> {
  const response = await fetch(listener.url, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} }),
  });
  await response.body?.cancel();
  return response.status;
}

describe('the MCP HTTP listener', () => {
  it('close() ends at once though a request body stalls (issue 36, item 2)', async () => {
    const listener = await listen();
    const port = Number(listener.address.split(':').at(-1));
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // Headers for a 1,000-byte body, then 10 bytes and nothing more: the request never completes.
    socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc"`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // On the old order (close() awaited before closeAllConnections()) this waited for Node's 300 s request timeout.
    const outcome = await Promise.race([listener.close().then(() => 'closed'), new Promise((resolve) => setTimeout(() => resolve('still waiting'), 10_000))]);
    expect(outcome).toBe('closed');
    socket.destroy();
  }, 20_000);

  it('ends a session idle past its limit, and keeps a used one (issue 36, item 4)', async () => {
    const listener = await listen({ sessionIdleMs: 600 });
    try {
      const idle = await session(listener);
      const used = await session(listener);
      // `idle` leaves without DELETE (its client closes its streams, as a process that exits does);
      // for 2 s `used` gets a request every 50 ms.
      await idle.client.close();
      const until = Date.now() + 2_000;
      while (Date.now() < until) {
        expect(await statusOf(listener, used.id)).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(await statusOf(listener, idle.id)).toBe(404);
      expect(await statusOf(listener, used.id)).toBe(200);
      await used.client.close();
    } finally {
      await listener.close();
    }
  }, 20_000);

  it('keeps at most maxSessions: a new one ends the least recently used', async () => {
    const listener = await listen({ maxSessions: 2 });
    try {
      const first = await session(listener);
      const second = await session(listener);
      expect(await statusOf(listener, second.id)).toBe(200);
      const third = await session(listener);
      expect(await statusOf(listener, first.id)).toBe(404);
      expect(await statusOf(listener, second.id)).toBe(200);
      expect(await statusOf(listener, third.id)).toBe(200);
      await Promise.all([first.client.close().catch(() => {}), second.client.close(), third.client.close()]);
    } finally {
      await listener.close();
    }
  }, 20_000);
});
