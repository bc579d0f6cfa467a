import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTurn, type RunTurnOptions, type TurnOutcome } from '../../../controller/loop/run-turn.js';
import type { TurnEvent } from '../../../controller/loop/turn-events.js';
import { createOpenAIResponsesModel } from '../../../controller/model/openai-responses-model.js';
import type { ResponseItem } from '../../../controller/model/responses-model.js';
import { functionCallItem, messageItem } from '../../../controller/model/responses-wire.js';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import { startScriptedResponsesServer, type ScriptStep, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const workspace = mkdtempSync(join(tmpdir(), 'controller-it-'));
let sidecar: StartedSidecar;
let client: SidecarClient;
const servers: ScriptedResponsesServer[] = [];
let turnCounter = 0;

beforeAll(async () => {
  sidecar = await startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(workspace, '.state')] });
  client = createSidecarClient({ address: sidecar.address });
});
afterAll(async () => {
  client?.close();
  await Promise.all(servers.map((server) => server.close()));
  await sidecar?.stop();
  rmSync(workspace, { recursive: true, force: true });
});

const call = (callId: string, name: string, args: unknown = {}, namespace?: string) =>
  functionCallItem({ callId, name, arguments: typeof args === 'string' ? args : JSON.stringify(args), ...(namespace ? { namespace } : {}) });
const outputs = (input: unknown) =>
  (input as ResponseItem[]).filter((item) => item.type === 'function_call_output').map((item) => ({ call_id: item.call_id, output: item.output }));

/** Runs one turn against a scripted Responses server and the fixture sidecar, through the real openai client. */
async function scripted(
  steps: ScriptStep[],
  options: Partial<RunTurnOptions> & { stream?: boolean; via?: SidecarClient; maxRetries?: number } = {},
): Promise<{ outcome: TurnOutcome; server: ScriptedResponsesServer; events: TurnEvent[] }> {
  const server = await startScriptedResponsesServer({ steps });
  servers.push(server);
  const model = createOpenAIResponsesModel({
    model: 'scripted-model',
    apiKey: 'test-key',
    baseURL: server.baseURL,
    stream: options.stream ?? true,
    maxRetries: options.maxRetries ?? 0,
  });
  const turn = await (options.via ?? client).openTurn({ agentId: 'agent-it', turnId: `t${++turnCounter}` }, { signal: AbortSignal.timeout(15_000) });
  const events: TurnEvent[] = [];
  try {
    const outcome = await runTurn({ model, turn, prompt: 'do it', onEvent: (event) => events.push(event), ...options });
    return { outcome, server, events };
  } finally {
    await turn.close({ timeoutMs: 5_000 });
  }
}

describe('the loop against scripted Responses servers and the fixture sidecar', () => {
  it('runs parallel calls together and pairs every call_id with its output, in call order', async () => {
    const { outcome, server, events } = await scripted([
      { output: [call('c1', 'sleep', { ms: 300 }), call('c2', 'sleep', { ms: 300 }), call('c3', 'echo', { a: 1 })] },
      { output: [messageItem('all done')] },
    ]);
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'all done', modelCalls: 2 });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]).toMatchObject({ model: 'scripted-model', store: false, stream: true, input: [{ type: 'message', role: 'user' }] });
    const second = server.requests[1]!;
    expect((second.input as ResponseItem[]).map((item) => item.type)).toEqual([
      'message', 'function_call', 'function_call', 'function_call', 'function_call_output', 'function_call_output', 'function_call_output',
    ]);
    expect(outputs(second.input)).toEqual([
      { call_id: 'c1', output: 'slept 300 ms' },
      { call_id: 'c2', output: 'slept 300 ms' },
      { call_id: 'c3', output: '{"a":1}' },
    ]);
    // Both sleeps started before either finished.
    const order = events.filter((e) => e.type === 'activity-started' || e.type === 'activity-completed').map((e) => `${e.type}:${(e as { callId: string }).callId}`);
    expect(order.indexOf('activity-started:c2')).toBeLessThan(order.indexOf('activity-completed:c1'));
  });

  it('holds calls behind a sequential one and keeps outputs in call order (non-streaming)', async () => {
    const { outcome, server, events } = await scripted(
      [
        { output: [call('s1', 'sleep', { ms: 200 }), call('s2', 'sleep_sequential', { ms: 10 }), call('s3', 'sleep', { ms: 10 })] },
        { output: [messageItem('ok')] },
      ],
      { stream: false },
    );
    expect(outcome.status).toBe('completed');
    expect(server.requests[0]!.stream).toBe(false);
    const order = events.filter((e) => e.type === 'activity-started' || e.type === 'activity-completed').map((e) => `${e.type}:${(e as { callId: string }).callId}`);
    expect(order).toEqual([
      'activity-started:s1', 'activity-completed:s1',
      'activity-started:s2', 'activity-completed:s2',
      'activity-started:s3', 'activity-completed:s3',
    ]);
    expect(outputs(server.requests[1]!.input).map((o) => o.call_id)).toEqual(['s1', 's2', 's3']);
  });

  it('feeds an unknown tool and invalid arguments back, and the corrected call succeeds', async () => {
    const { outcome, server } = await scripted([
      { output: [call('u1', 'no_such_tool'), call('v1', 'sleep', { ms: 'soon' })] },
      (body) => {
        const [unknown, invalid] = outputs(body.input);
        expect(String(unknown!.output)).toMatch(/no_such_tool/);
        expect(String(invalid!.output)).toMatch(/ms/);
        return { output: [call('v2', 'sleep', { ms: 1 })] };
      },
      { output: [messageItem('fixed')] },
    ]);
    expect(outcome.status).toBe('completed');
    expect(outputs(server.requests[2]!.input).at(-1)).toEqual({ call_id: 'v2', output: 'slept 1 ms' });
  });

  it('ends the turn when a result says terminate_turn', async () => {
    const { outcome, server } = await scripted([{ output: [call('t1', 'terminate', { text: 'bye' })] }, { output: [messageItem('never')] }]);
    expect(outcome).toMatchObject({ status: 'terminated', finalText: 'bye', modelCalls: 1 });
    expect(server.requests).toHaveLength(1);
    expect(outputs(outcome.input)).toEqual([{ call_id: 't1', output: 'bye' }]);
  });

  it('stops at the model call limit with a clear status', async () => {
    const { outcome, server } = await scripted(
      [{ output: [call('n1', 'noop')] }, { output: [call('n2', 'noop')] }, { output: [call('n3', 'noop')] }],
      { maxModelCalls: 2 },
    );
    expect(outcome.status).toBe('max_model_calls');
    expect(outcome.error).toContain('2 times');
    expect(server.requests).toHaveLength(2);
    // The last response's call is not run: no model would read its output.
    expect(outputs(outcome.input)).toEqual([
      { call_id: 'n1', output: 'ok' },
      { call_id: 'n2', output: 'This call to noop was not run: the turn stopped at its limit of 2 model calls, so no model would read this output.' },
    ]);
  });

  it('routes a namespaced call by the item namespace, and by flattened name', async () => {
    const { outcome, server } = await scripted([{ output: [call('l1', 'lookup', { key: 'k' }, 'fixture_ns')] }, { output: [messageItem('ok')] }]);
    expect(outcome.status).toBe('completed');
    const tools = server.requests[0]!.tools as Array<Record<string, unknown>>;
    const namespace = tools.find((t) => t.type === 'namespace');
    expect(namespace).toMatchObject({ name: 'fixture_ns', description: 'Fixture tools grouped under one namespace.' });
    expect((namespace!.tools as Array<{ name: string }>).map((t) => t.name)).toEqual(['lookup']);
    expect(outputs(server.requests[1]!.input)).toEqual([{ call_id: 'l1', output: 'value of k' }]);

    const flat = await scripted([{ output: [call('f1', 'fixture_ns__lookup', { key: 'z' })] }, { output: [messageItem('ok')] }], { flattenNamespaces: true });
    const flatNames = (flat.server.requests[0]!.tools as Array<{ type: string; name?: string }>).map((t) => t.name);
    expect(flatNames).toContain('fixture_ns__lookup');
    expect((flat.server.requests[0]!.tools as Array<{ type: string }>).some((t) => t.type === 'namespace')).toBe(false);
    expect(outputs(flat.server.requests[1]!.input)).toEqual([{ call_id: 'f1', output: 'value of z' }]);
  });

  it('client tool search: refuses a deferred tool until tool_search loads it, then appends it and calls it', async () => {
    const { outcome, server } = await scripted(
      [
        { output: [call('d0', 'deferred_lookup', { key: 'k' }, 'fixture_ns')] },
        { output: [call('s1', 'tool_search', { query: 'deep archive' })] },
        { output: [call('d1', 'deferred_lookup', { key: 'k' }, 'fixture_ns')] },
        { output: [messageItem('found it')] },
      ],
      { toolSearch: 'client' },
    );
    expect(outcome.status).toBe('completed');
    const [first, , third] = server.requests as Array<{ tools: Array<Record<string, unknown>>; input: ResponseItem[] }>;
    expect(JSON.stringify(first!.tools)).not.toContain('deferred_lookup');
    expect(first!.tools.at(-1)).toMatchObject({ type: 'function', name: 'tool_search' });
    expect(String(outputs(server.requests[1]!.input)[0]!.output)).toMatch(/not loaded yet.*tool_search/);
    expect(String(outputs(third!.input)[1]!.output)).toContain('deferred_lookup');
    // Appended at the end: the earlier tools are unchanged, so the provider's prompt cache holds.
    expect(third!.tools.slice(0, first!.tools.length)).toEqual(first!.tools);
    expect(third!.tools.slice(first!.tools.length)).toMatchObject([{ type: 'namespace', name: 'fixture_ns', tools: [{ name: 'deferred_lookup' }] }]);
    expect(outputs(server.requests[3]!.input).at(-1)).toEqual({ call_id: 'd1', output: 'archived value of k' });
  });

  it('hosted tool search: sends defer_loading and tool_search, and carries the search items back', async () => {
    const searchCall = { type: 'tool_search_call', id: 'tsc_1', call_id: 'ts1', status: 'completed', arguments: { query: 'archive' } };
    const searchOutput = { type: 'tool_search_output', id: 'tso_1', call_id: 'ts1', status: 'completed', tools: [{ type: 'namespace', name: 'fixture_ns' }] };
    const { outcome, server } = await scripted(
      [{ output: [searchCall, searchOutput, call('h1', 'deferred_lookup', { key: 'q' }, 'fixture_ns')] }, { output: [messageItem('ok')] }],
      { toolSearch: 'hosted' },
    );
    expect(outcome.status).toBe('completed');
    const tools = server.requests[0]!.tools as Array<Record<string, unknown>>;
    expect(tools.at(-1)).toEqual({ type: 'tool_search' });
    const namespace = tools.find((t) => t.type === 'namespace')!;
    expect(namespace.defer_loading).toBeUndefined();
    expect(namespace.tools).toMatchObject([{ name: 'lookup' }, { name: 'deferred_lookup', defer_loading: true }]);
    expect((namespace.tools as Array<Record<string, unknown>>)[0]!.defer_loading).toBeUndefined();
    const input = server.requests[1]!.input as ResponseItem[];
    expect(input.slice(1, 3)).toEqual([searchCall, searchOutput]);
    expect(outputs(input)).toEqual([{ call_id: 'h1', output: 'archived value of q' }]);
  });

  it('aborts mid-turn: the running tool sees its abort and the call still gets an output', async () => {
    const probe = join(workspace, `probe-${Date.now()}.json`);
    const controller = new AbortController();
    const { outcome } = await scripted([{ output: [call('a1', 'abort_probe', { path: probe })] }, { output: [messageItem('never')] }], {
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === 'activity-started') controller.abort();
      },
    });
    expect(outcome.status).toBe('aborted');
    expect(outputs(outcome.input).map((o) => o.call_id)).toEqual(['a1']);
    expect(existsSync(probe)).toBe(true);
    expect(JSON.parse(readFileSync(probe, 'utf8'))).toMatchObject({ aborted: true });
  });

  it('aborts a model request in flight', async () => {
    const controller = new AbortController();
    const pending = scripted([{ hang: true }], { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 50));
    while (servers.length === 0 || servers.at(-1)!.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort();
    const { outcome } = await pending;
    expect(outcome).toMatchObject({ status: 'aborted', modelCalls: 0 });
  });

  it('reports 401 and 404 clearly and retries a 429', async () => {
    const unauthorized = await scripted([{ status: 401, body: { error: { message: 'bad key' } } }]);
    expect(unauthorized.outcome.status).toBe('model_error');
    expect(unauthorized.outcome.error).toContain('rejected the API key (401)');
    const missing = await scripted([{ status: 404, body: { error: { message: 'no such model' } } }]);
    expect(missing.outcome.error).toMatch(/model scripted-model not found at http:\/\/127\.0\.0\.1:\d+\/v1 \(404\)/);
    const limited = await scripted(
      [{ status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after-ms': '10' } }, { output: [messageItem('after retry')] }],
      { maxRetries: 2 },
    );
    expect(limited.outcome).toMatchObject({ status: 'completed', finalText: 'after retry' });
    expect(limited.server.requests).toHaveLength(2);
  });
});

describe('the loop when the sidecar dies', () => {
  it('gives the call in flight an error output and ends with sidecar_unavailable', async () => {
    const doomed = await startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(workspace, '.state')] });
    const doomedClient = createSidecarClient({ address: doomed.address });
    try {
      const { outcome, server } = await scripted([{ output: [call('k1', 'sleep', { ms: 10_000 }), call('k2', 'noop')] }, { output: [messageItem('never')] }], {
        via: doomedClient,
        onEvent: (event) => {
          if (event.type === 'activity-started' && event.callId === 'k1') {
            // The fixture sidecar runs in its own process group (tsx and the node it starts): kill it all.
            process.kill(-doomed.child.pid!, 'SIGKILL');
          }
        },
      });
      expect(outcome.status).toBe('sidecar_unavailable');
      expect(outcome.error).toContain('sidecar');
      expect(server.requests).toHaveLength(1);
      const recorded = outputs(outcome.input);
      expect(recorded.map((o) => o.call_id)).toEqual(['k1', 'k2']);
      expect(String(recorded[0]!.output)).toContain('sidecar became unavailable');
    } finally {
      doomedClient.close();
      await doomed.stop('SIGKILL');
    }
  });
});
