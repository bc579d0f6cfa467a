import { readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createAdaptorServer } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { errorMessage, isToolRuntimeError, ToolRuntimeError } from '../../src/index.js';
import type { ControlReply, ControlRequest } from '../../src/gen/toolruntime/v1/control_plane.js';
import { listenHost } from '../../src/grpc-server/listen-address.js';
import { isControlPlaneError } from '../control-plane/domain/control-plane-error.js';
import { consoleGuard } from './console-guard.js';
import { readConsoleState, type ConsoleSources } from './console-state.js';
import type { FeedMessage } from './turn-feed.js';

/** Options of `startConsoleServer`. */
export interface ConsoleServerOptions extends ConsoleSources {
  /** `host:port` to listen on. */
  address: string;
  /** The page's API calls and live updates need `authorization: Bearer <token>`, on every address. */
  token: string;
  /** Answers operators' control requests (cancel a workflow run, a job) as ControlPlaneService does. */
  answer?: (request: ControlRequest) => Promise<ControlReply>;
  /** Decides a stored approval as ControlPlaneService's DecideApproval does. */
  decideStoredApproval?: (approvalId: string, decision: { approved: boolean; reason?: string }) => Promise<unknown>;
  /** Cancels a running turn of this process; false when it is not one. */
  cancelTurn?: (turnId: string) => boolean;
  /** How often the store is read for changes while a page is connected (default 1000 ms). */
  pollMs?: number;
}

/** A running console. */
export interface ConsoleServer {
  /** `http://host:port/` (no token: safe to print and log). */
  readonly url: string;
  /** `host:port` as bound (the real port for `:0`). */
  readonly address: string;
  /** Stops listening and ends the pages' live streams. Idempotent. */
  close(): Promise<void>;
}

// From source, the page sits beside this file. Built (esbuild bundles one folder below dist/, as
// src/runtime-path.ts on main expects), it is dist/controller/console/page/: the build copies it.
const pageDir = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './page/' : '../controller/console/page/', import.meta.url));
const pageFiles: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'views.js': 'text/javascript; charset=utf-8',
  'dom.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
};

/**
 * Serves the web console: the page (static files of controller/console/page/), its state as JSON,
 * live updates over SSE (each turn event as it happens; `changed` when the store's views changed),
 * and the actions approve, deny and cancel. Checks every request with `consoleGuard`.
 *
 * @throws ToolRuntimeError `invalid_request` for an empty token or an address that cannot be bound.
 */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const host = listenHost(options.address);
  const portText = options.address.slice(options.address.lastIndexOf(':') + 1);
  if (!host || !/^\d+$/.test(portText)) throw new ToolRuntimeError('invalid_request', `--console needs HOST:PORT (for example 127.0.0.1:7401), not "${options.address}"`);
  if (!options.token) throw new ToolRuntimeError('invalid_request', 'the console needs a token: every API request must carry a credential');
  const closing = new AbortController();
  const app = new Hono();
  let port = Number(portText);
  // The guard needs the real port (for :0), known once listening: it reads it at each request.
  app.use('*', (c, next) => consoleGuard({ host, port, token: options.token })(c, next));

  app.get('/', (c) => page(c, 'index.html'));
  app.get('/page/:file', (c) => page(c, c.req.param('file')));
  app.get('/api/state', async (c) => c.json(await readConsoleState(options, AbortSignal.any([closing.signal, AbortSignal.timeout(10_000)]))));
  app.get('/api/events', (c) =>
    streamSSE(c, async (stream) => {
      const queue: FeedMessage[] = [];
      let wake: (() => void) | undefined;
      const push = (message: FeedMessage) => {
        if (queue.length > 5_000) queue.splice(0, queue.length, { type: 'changed', what: 'overflow' });
        queue.push(message);
        wake?.();
      };
      const unsubscribe = options.feed.subscribe(push);
      const unwatch = watchStore(push);
      const end = () => wake?.();
      closing.signal.addEventListener('abort', end);
      stream.onAbort(end);
      try {
        await stream.writeSSE({ event: 'hello', data: '{}' });
        while (!stream.aborted && !closing.signal.aborted) {
          const message = queue.shift();
          if (message) {
            await stream.writeSSE({ event: message.type, data: JSON.stringify(message) });
            continue;
          }
          // Wait for a message, at most 15 s (then a comment keeps proxies from timing out).
          let timer: NodeJS.Timeout | undefined;
          await new Promise<void>((resolve) => {
            wake = resolve;
            timer = setTimeout(resolve, 15_000);
          });
          clearTimeout(timer);
          wake = undefined;
          if (queue.length === 0 && !stream.aborted && !closing.signal.aborted) await stream.write(': keep-alive\n\n');
        }
      } finally {
        unsubscribe();
        unwatch();
        closing.signal.removeEventListener('abort', end);
      }
    }),
  );

  app.post('/api/approvals/:id', async (c) => {
    const body = await jsonBody(c);
    if (typeof body.approved !== 'boolean') return c.json({ error: 'the body must be {"approved": true|false, "reason"?: string}' }, 400);
    const decision = { approved: body.approved, ...(typeof body.reason === 'string' && body.reason !== '' ? { reason: body.reason.slice(0, 2_000) } : {}) };
    const approvalId = c.req.param('id');
    try {
      if (options.localApprovals?.has(approvalId)) options.localApprovals.decide(approvalId, decision);
      else if (options.decideStoredApproval) await options.decideStoredApproval(approvalId, decision);
      else return c.json({ error: `no call waits for approval "${approvalId}"` }, 404);
    } catch (error) {
      return c.json({ error: errorMessage(error) }, isControlPlaneError(error, 'not_found') ? 404 : 409);
    }
    options.feed.changed('approvals');
    return c.json({ ok: true });
  });
  app.post('/api/workflows/:id/cancel', (c) => control(c, { $case: 'cancelWorkflow', value: { agentId: '', runId: c.req.param('id'), reason: 'cancelled from the console' } }));
  app.post('/api/jobs/:id/cancel', (c) => control(c, { $case: 'cancelJob', value: { agentId: '', jobId: c.req.param('id'), reason: 'cancelled from the console' } }));
  app.post('/api/turns/:id/cancel', (c) => {
    if (!options.cancelTurn?.(c.req.param('id'))) return c.json({ error: `turn "${c.req.param('id')}" is not running in this process` }, 404);
    return c.json({ ok: true });
  });
  app.notFound((c) => c.json({ error: `no such page: ${c.req.path}` }, 404));
  app.onError((error, c) => c.json({ error: errorMessage(error) }, isToolRuntimeError(error, 'invalid_request') ? 400 : 500));

  async function control(c: Context, request: NonNullable<ControlRequest['request']>) {
    if (!options.answer) return c.json({ error: 'this console has no control plane to act on' }, 404);
    const reply = await options.answer({ request });
    if (reply.reply?.$case === 'error') return c.json({ error: reply.reply.value.message }, reply.reply.value.code === 'not_found' ? 404 : 409);
    options.feed.changed(request.$case);
    return c.json({ ok: true });
  }

  // One reader of the store for all pages: a `changed` message when its views differ.
  const watchers = new Set<(message: FeedMessage) => void>();
  let last = '';
  const poll = setInterval(() => {
    if (watchers.size === 0 || !options.store) return;
    void readConsoleState({ ...options, agents: () => [] }, closing.signal).then((state) => {
      const fingerprint = JSON.stringify([state.workflows, state.schedules, state.jobs, state.approvals]);
      if (fingerprint === last) return;
      last = fingerprint;
      for (const watcher of watchers) watcher({ type: 'changed', what: 'store' });
    });
  }, options.pollMs ?? 1_000);
  poll.unref();
  function watchStore(watcher: (message: FeedMessage) => void) {
    watchers.add(watcher);
    return () => watchers.delete(watcher);
  }

  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new ToolRuntimeError('invalid_request', `the console cannot listen on ${options.address}: ${errorMessage(error)}`)));
    server.listen(port, host, () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${port}/`,
    address: `${shownHost}:${port}`,
    close() {
      closed ??= new Promise<void>((resolve) => {
        clearInterval(poll);
        closing.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

async function page(c: Context, file: string) {
  const type = pageFiles[file];
  if (!type) return c.json({ error: `no such page: ${file}` }, 404);
  return c.body(await readFile(`${pageDir}${file}`), 200, { 'content-type': type, 'cache-control': 'no-store' });
}

async function jsonBody(c: Context): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.length > 16_384) throw new ToolRuntimeError('invalid_request', 'the request body is over 16 KiB');
  try {
    const value: unknown = text === '' ? {} : JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new ToolRuntimeError('invalid_request', 'the request body is not a JSON object');
}
