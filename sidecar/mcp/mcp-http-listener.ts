import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { chmodSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage, ToolRuntimeError, type Logger } from '../../src/index.js';
import { boundAddress, isLoopbackAddress, listenHost } from '../../src/grpc-server/listen-address.js';
import { createMcpTurnServer, type McpServeOptions, type McpTurnServer } from './mcp-turn-server.js';

/** The sidecar's Streamable HTTP MCP endpoint, while it listens. */
export interface McpHttpListener {
  /** The bound address (`host:port` with the real port, or `unix:/path`). */
  readonly address: string;
  /** The endpoint's URL (`http://host:port/mcp`); for a unix socket, the path part only. */
  readonly url: string;
  /** Stops listening and ends every session (their turns' calls are aborted). */
  close(): Promise<void>;
}

/** The path the endpoint serves; every other path is 404. */
export const MCP_HTTP_PATH = '/mcp';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** How long an MCP session may go without a request before it is ended. */
export const DEFAULT_SESSION_IDLE_MS = 30 * 60_000;
/** How many MCP sessions one listener keeps at once. */
export const DEFAULT_MAX_SESSIONS = 100;

interface Session {
  transport: StreamableHTTPServerTransport;
  turn: McpTurnServer;
  lastUsed: number;
  /** Requests of the session in flight (an open SSE stream among them): a busy session is not idle. */
  active: number;
}

/**
 * Serves MCP over Streamable HTTP at `address` (`host:port`, `[::1]:port`, `unix:/path`), one
 * turn per MCP session (see createMcpTurnServer). The rules are the gRPC port's: without `token`
 * only a loopback address or a unix socket; with it, every request needs `Authorization: Bearer
 * <token>` (compared in constant time) or gets 401. A request whose `Origin` is not a loopback
 * origin is answered 403 before anything else (the spec's defence against DNS rebinding: a
 * browser page cannot drive the agent's tools). Bodies over `maxBodyBytes` get 413.
 *
 * @throws ToolRuntimeError `invalid_request` for a non-loopback address without a token; the bind
 *   error otherwise.
 */
export async function startMcpHttpListener(
  options: McpServeOptions & {
    address: string;
    token?: string;
    maxBodyBytes: number;
    /** A session with no request for this long is ended (default 30 min): clients that leave without DELETE. */
    sessionIdleMs?: number;
    /** At most this many sessions (default 100): a new one ends the least recently used. */
    maxSessions?: number;
  },
): Promise<McpHttpListener> {
  const { logger } = options;
  if (!options.token && !isLoopbackAddress(options.address)) {
    throw new ToolRuntimeError(
      'invalid_request',
      `refusing to serve MCP on ${options.address} without a token: use a loopback address (127.0.0.1, ::1, localhost) or a unix socket, or give --token-file`,
    );
  }
  const expected = options.token ? digest(`Bearer ${options.token}`) : undefined;
  const sessions = new Map<string, Session>();
  const idleMs = options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS;
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  // Each session holds a Server, a turn and its tool set until DELETE: without an end of their own,
  // clients that reconnect without DELETE would grow the map without bound (issue 36, item 4).
  const end = (id: string, why: string) => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    session.turn.close(why);
    void session.transport.close().catch(() => undefined);
    logger.info('mcp session ended', { why });
  };
  const sweeper = setInterval(() => {
    const now = Date.now();
    for (const [id, session] of sessions) if (session.active === 0 && now - session.lastUsed > idleMs) end(id, `idle for over ${idleMs} ms`);
  }, Math.min(60_000, Math.max(50, Math.floor(idleMs / 2))));
  sweeper.unref();

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const origin = request.headers.origin;
    if (origin !== undefined && !isLoopbackOrigin(origin)) {
      return refuse(response, 403, `the Origin ${JSON.stringify(origin.slice(0, 200))} is not allowed: only loopback origins may use this endpoint`);
    }
    if (expected) {
      const given = request.headers.authorization ?? '';
      if (given === '' || !timingSafeEqual(digest(given), expected)) {
        response.setHeader('WWW-Authenticate', 'Bearer');
        return refuse(response, 401, given === '' ? 'missing `Authorization: Bearer <token>`' : 'the bearer token is wrong');
      }
    }
    if (new URL(request.url ?? '/', 'http://localhost').pathname !== MCP_HTTP_PATH) return refuse(response, 404, `MCP is served at ${MCP_HTTP_PATH}`);
    let body: unknown;
    if (request.method === 'POST') {
      const read = await readJsonBody(request, options.maxBodyBytes);
      if (!read.ok) return refuse(response, read.status, read.message);
      body = read.value;
    }
    const sessionId = request.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (existing) {
      existing.lastUsed = Date.now();
      existing.active++;
      response.once('close', () => {
        existing.active--;
        existing.lastUsed = Date.now();
      });
      return existing.transport.handleRequest(request, response, body);
    }
    if (sessionId !== undefined) return refuse(response, 404, 'unknown or ended MCP session: initialize a new one');
    if (request.method !== 'POST' || !isInitializeRequest(body)) return refuse(response, 400, 'no MCP session: the first request must be a POST of `initialize`');
    const label = randomUUID();
    const turn = createMcpTurnServer({ ...options, label });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => label,
      onsessioninitialized: (id) => {
        while (sessions.size >= maxSessions) {
          const oldest = [...sessions].sort(([, a], [, b]) => a.lastUsed - b.lastUsed)[0];
          if (!oldest) break;
          end(oldest[0], `over the cap of ${maxSessions} sessions; the least recently used ends`);
        }
        sessions.set(id, { transport, turn, lastUsed: Date.now(), active: 0 });
      },
    });
    transport.onclose = () => {
      sessions.delete(label);
      turn.close('the MCP session was closed');
    };
    await turn.server.connect(transport);
    await transport.handleRequest(request, response, body);
  };

  const http = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      logger.warn('an MCP HTTP request failed', { error: errorMessage(error) });
      if (!response.headersSent) refuse(response, 500, 'the sidecar failed handling the request');
      else response.end();
    });
  });
  const host = listenHost(options.address);
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    if (host === undefined) http.listen(options.address.replace(/^unix:/, ''), resolve);
    else http.listen(Number(options.address.slice(options.address.lastIndexOf(':') + 1)), host, resolve);
  });
  // A unix socket gets the control plane's mode, whatever the umask: only this user may connect
  // (the token is still required; issue 32, item 10).
  if (host === undefined) chmodSync(options.address.replace(/^unix:/, ''), 0o600);
  const bound = http.address();
  const address = typeof bound === 'object' && bound !== null ? boundAddress(options.address, (bound as AddressInfo).port) : options.address;
  const url = host === undefined ? MCP_HTTP_PATH : `http://${address}${MCP_HTTP_PATH}`;
  logger.info('mcp listening', { url, auth: expected !== undefined });
  let closing: Promise<void> | undefined;
  return {
    address,
    url,
    close() {
      closing ??= (async () => {
        clearInterval(sweeper);
        for (const { transport, turn } of [...sessions.values()]) {
          turn.close('the sidecar is shutting down');
          await transport.close().catch(() => undefined);
        }
        sessions.clear();
        // close() waits for every connection to end, so the connections are ended first: one request
        // whose body stalls would otherwise hold the drain for Node's request timeout (300 s).
        const closed = new Promise<void>((resolve) => http.close(() => resolve()));
        http.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}

/** True for `http(s)://localhost`, `127.x.x.x` or `[::1]`, any port. */
function isLoopbackOrigin(origin: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function refuse(response: ServerResponse, status: number, message: string): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

/** The request's JSON body, bounded; `{ ok: false }` with the status to answer otherwise. */
async function readJsonBody(request: IncomingMessage, maxBytes: number): Promise<{ ok: true; value: unknown } | { ok: false; status: number; message: string }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return { ok: false, status: 413, message: `the request body is over ${maxBytes} bytes` };
    chunks.push(chunk);
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch (error) {
    return { ok: false, status: 400, message: `the request body is not JSON: ${errorMessage(error)}` };
  }
}
