// The console server in process, over real HTTP on 127.0.0.1: its checks, its token, the
// in-process approvals it decides, the live stream, and the feed's bounds.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ConsoleApprovals } from '../../../../controller/console/console-approvals.js';
import { takeConsoleFlags } from '../../../../controller/console/console-flags.js';
import { startConsoleServer, type ConsoleServer } from '../../../../controller/console/console-server.js';
import { TurnFeed } from '../../../../controller/console/turn-feed.js';
import type { ApprovalRequestEvent } from '../../../../controller/sidecar-client/sidecar-types.js';

const servers: ConsoleServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

const TOKEN = 'console-test-token';

async function start(options: { token?: string; approvals?: ConsoleApprovals; feed?: TurnFeed } = {}) {
  const feed = options.feed ?? new TurnFeed();
  const server = await startConsoleServer({ address: '127.0.0.1:0', feed, agents: () => [{ agentId: 'a1' }], ...(options.approvals ? { localApprovals: options.approvals } : {}), token: options.token ?? TOKEN });
  servers.push(server);
  return { server, feed };
}

/** fetch with the console's token, as the page sends it. */
function authed(url: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${TOKEN}` } });
}

const approvalRequest = (requestId: string): ApprovalRequestEvent => ({
  callId: `call-${requestId}`,
  requestId,
  kind: 'approval',
  approval: { toolName: 'write_file', label: 'Writing a.txt', parameters: { path: 'a.txt' }, readOnly: false, destructive: true },
}) as ApprovalRequestEvent;

/** A GET with a Host header of the test's choosing (fetch would not send it). */
function getWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = request({ host: target.hostname, port: target.port, path: '/api/state', headers: { host, authorization: `Bearer ${TOKEN}` } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the console server', () => {
  it('serves the page and the state on loopback, with no CORS header and a strict CSP', async () => {
    const { server } = await start();
    const page = await fetch(server.url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script type="module" src="/page/app.js">');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('access-control-allow-origin')).toBeNull();
    const state = (await (await authed(`${server.url}api/state`)).json()) as { agents: Array<{ agentId: string; health: string }> };
    expect(state.agents).toEqual([{ agentId: 'a1', health: 'unknown' }]);
    expect((await fetch(`${server.url}page/../console-server.ts`)).status).toBe(404);
    expect((await fetch(`${server.url}page/secret.js`)).status).toBe(404);
  });

  it('refuses a rebound Host, another Origin, a cross-site fetch and non-JSON actions', async () => {
    const { server } = await start();
    const port = new URL(server.url).port;
    expect(await getWithHost(server.url, `evil.example:${port}`)).toBe(403);
    expect(await getWithHost(server.url, `localhost:${port}`)).toBe(200);
    expect((await authed(`${server.url}api/state`, { headers: { origin: 'http://evil.example' } })).status).toBe(403);
    expect((await authed(`${server.url}api/state`, { headers: { origin: `http://127.0.0.1:${port}` } })).status).toBe(200);
    expect((await authed(`${server.url}api/state`, { headers: { 'sec-fetch-site': 'same-site' } })).status).toBe(403);
    const form = await authed(`${server.url}api/approvals/x`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'approved=true' });
    expect(form.status).toBe(403);
  });

  it('needs the token on every route that reads or acts, on loopback too; the page loads without it', async () => {
    const approvals = new ConsoleApprovals();
    const { server } = await start({ token: 'sekret-token', approvals });
    const decision = approvals.approverFor({ agentId: 'a1', turnId: 't1' })(approvalRequest('r1'), new AbortController().signal);
    // What a local process that is no browser sends: no Origin, JSON, right Host; only the token is missing.
    for (const path of ['', 'page/app.js', 'page/style.css']) expect((await fetch(`${server.url}${path}`)).status).toBe(200);
    const routes: Array<[string, string]> = [
      ['GET', 'api/state'],
      ['GET', 'api/events'],
      ['POST', 'api/approvals/t1:r1'],
      ['POST', 'api/workflows/run-1/cancel'],
      ['POST', 'api/jobs/job-1/cancel'],
      ['POST', 'api/turns/t1/cancel'],
    ];
    for (const authorization of [undefined, 'Bearer wrong-token!', 'sekret-token', 'Bearer sekret-token-and-more']) {
      for (const [method, path] of routes) {
        const response = await fetch(`${server.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
          ...(method === 'POST' ? { body: JSON.stringify({ approved: true }) } : {}),
        });
        expect([method, path, authorization, response.status]).toEqual([method, path, authorization, 401]);
      }
    }
    expect(approvals.pending().map((approval) => approval.approvalId)).toEqual(['t1:r1']);
    expect((await fetch(`${server.url}api/state`, { headers: { authorization: 'Bearer sekret-token' } })).status).toBe(200);
    approvals.close();
    await expect(decision).resolves.toMatchObject({ approved: false });
    await expect(startConsoleServer({ address: '127.0.0.1:0', token: '', feed: new TurnFeed(), agents: () => [] })).rejects.toThrow(/needs a token/);
    // Beyond loopback, with its token, any Host name reaches the token check.
    const wide = await startConsoleServer({ address: '0.0.0.0:0', token: 'wide-token', feed: new TurnFeed(), agents: () => [] });
    servers.push(wide);
    const widePort = new URL(wide.url).port;
    expect(await getWithHost(`http://127.0.0.1:${widePort}/`, `console.example:${widePort}`)).toBe(401);
    await expect(startConsoleServer({ address: 'nonsense', token: TOKEN, feed: new TurnFeed(), agents: () => [] })).rejects.toThrow(/HOST:PORT/);
  });

  it('decides an in-process approval from the API once; a second decision is refused', async () => {
    const approvals = new ConsoleApprovals();
    const { server } = await start({ approvals });
    const decision = approvals.approverFor({ agentId: 'a1', turnId: 't1' })(approvalRequest('r1'), new AbortController().signal);
    const state = (await (await authed(`${server.url}api/state`)).json()) as { approvals: Array<{ approvalId: string; parametersJson: string; source: string }> };
    expect(state.approvals).toMatchObject([{ approvalId: 't1:r1', parametersJson: '{"path":"a.txt"}', source: 'process' }]);
    const post = (body: unknown) => authed(`${server.url}api/approvals/t1:r1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post({ approved: 'yes' })).status).toBe(400);
    expect((await post({ approved: false, reason: 'not now' })).status).toBe(200);
    await expect(decision).resolves.toEqual({ approved: false, reason: 'not now' });
    expect((await post({ approved: true })).status).toBe(404);
  });

  it('withdraws an approval whose call ended, and denies the waiting ones on close', async () => {
    const approvals = new ConsoleApprovals();
    const ended = new AbortController();
    const withdrawn = approvals.approverFor({ agentId: 'a1', turnId: 't1' })(approvalRequest('r1'), ended.signal);
    const waiting = approvals.approverFor({ agentId: 'a1', turnId: 't1' })(approvalRequest('r2'), new AbortController().signal);
    ended.abort();
    await expect(withdrawn).resolves.toMatchObject({ approved: false });
    expect(approvals.pending().map((approval) => approval.approvalId)).toEqual(['t1:r2']);
    approvals.close();
    await expect(waiting).resolves.toMatchObject({ approved: false, reason: expect.stringContaining('closed') });
  });

  it('streams each recorded turn event to a connected page', async () => {
    const { server, feed } = await start();
    const response = await authed(`${server.url}api/events`);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('event: hello')) text += (await reader.read()).value ?? '';
    feed.record({ turnId: 't1', agentId: 'a1', kind: 'text', label: 'hi' }, { type: 'activity-started', callId: 'c1', name: 'read_file', label: 'Reading <b>x</b>' });
    while (!text.includes('Reading <b>x</b>')) text += (await reader.read()).value ?? '';
    expect(text).toContain('event: turn-event');
    await reader.cancel();
  });
});

describe('the turn feed', () => {
  it('keeps at most maxTurns finished turns and maxEventsPerTurn events, cuts long strings, and tracks todos', () => {
    const feed = new TurnFeed({ maxTurns: 2, maxEventsPerTurn: 3, maxPayloadChars: 10 });
    const meta = (turnId: string) => ({ turnId, agentId: 'a1', kind: 'text', label: turnId });
    for (const id of ['t1', 't2', 't3']) {
      feed.record(meta(id), { type: 'turn-started', turnId: id, model: 'm', tools: 1, deferredTools: 0 });
      if (id !== 't3') feed.record(meta(id), { type: 'turn-finished', status: 'completed', finalText: '', modelCalls: 1 });
    }
    expect(feed.turns().map((turn) => turn.turnId)).toEqual(['t3', 't2']);
    for (let index = 0; index < 5; index += 1) feed.record(meta('t3'), { type: 'presentation', callId: 'c', kind: 'command.output', payload: { text: 'x'.repeat(50) } });
    const t3 = feed.turns()[0]!;
    expect(t3.events).toHaveLength(3);
    expect(t3.droppedEvents).toBe(3);
    expect((t3.events[2]!.event as { payload: { text: string } }).payload.text).toMatch(/^x{10}… \(40 more characters\)$/);
    feed.record(meta('t3'), { type: 'presentation', callId: 'c', kind: 'todo.updated', payload: { todos: [{ id: '1', content: 'do', status: 'pending' }] } });
    expect(feed.todos()).toEqual({ a1: [{ id: '1', content: 'do', status: 'pending' }] });
  });

  it('keeps all turns\' events under maxTotalChars, dropping the oldest turn\'s first', () => {
    const feed = new TurnFeed({ maxTotalChars: 2_000 });
    const meta = (turnId: string) => ({ turnId, agentId: 'a1', kind: 'text', label: turnId });
    const output = { type: 'presentation', callId: 'c', kind: 'command.output', payload: { text: 'y'.repeat(300) } } as const;
    for (let index = 0; index < 5; index += 1) feed.record(meta('old'), output);
    for (let index = 0; index < 5; index += 1) feed.record(meta('new'), output);
    const [newest, oldest] = feed.turns();
    const total = [...newest!.events, ...oldest!.events].reduce((sum, item) => sum + JSON.stringify(item.event).length, 0);
    expect(total).toBeLessThanOrEqual(2_000);
    expect(newest!.events.length).toBeGreaterThan(oldest!.events.length);
    expect(oldest!.droppedEvents).toBeGreaterThan(0);
  });

  it('takes --console flags out of a command line', () => {
    expect(takeConsoleFlags(['--prompt', 'x', '--console'])).toEqual({ argv: ['--prompt', 'x'], console: { address: '127.0.0.1:7401' } });
    expect(takeConsoleFlags(['--console', '127.0.0.1:0', '--quiet'])).toEqual({ argv: ['--quiet'], console: { address: '127.0.0.1:0' } });
    expect(takeConsoleFlags(['--console=[::1]:9', '--console-token-file', 'f'])).toEqual({ argv: [], console: { address: '[::1]:9', tokenFile: 'f' } });
    expect(() => takeConsoleFlags(['--console-token-file', 'f'])).toThrow(/needs --console/);
  });
});
