// The controller against a scripted Responses server that misbehaves as real providers and gateways
// do, over real HTTP through the real openai client, with the fixture sidecar as a real child.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTurn, type RunTurnOptions, type TurnOutcome } from '../../../controller/loop/run-turn.js';
import type { TurnEvent } from '../../../controller/loop/turn-events.js';
import { createOpenAIResponsesModel, type OpenAIResponsesModelOptions } from '../../../controller/model/openai-responses-model.js';
import type { ResponseItem } from '../../../controller/model/responses-model.js';
import { buildResponse, functionCallItem, messageItem, responseSseEvents } from '../../../controller/model/responses-wire.js';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import { startScriptedResponsesServer, type ScriptStep, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const workspace = mkdtempSync(join(tmpdir(), 'controller-misbehaving-'));
const MAX_IN_FLIGHT = 4;
let sidecar: StartedSidecar;
let client: SidecarClient;
const servers: ScriptedResponsesServer[] = [];
let turnCounter = 0;

beforeAll(async () => {
  // A small in-flight limit, so a response with a few dozen parallel calls goes past it.
  sidecar = await startSidecar({
    entry: 'test/fixtures/fixture-sidecar.ts',
    args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(workspace, '.state'), '--max-concurrent-calls', String(MAX_IN_FLIGHT)],
  });
  client = createSidecarClient({ address: sidecar.address });
});
afterAll(async () => {
  client?.close();
  await Promise.all(servers.map((server) => server.close()));
  await sidecar?.stop();
  rmSync(workspace, { recursive: true, force: true });
});

const call = (callId: string, name: string, args: unknown = {}, status = 'completed') => ({
  ...functionCallItem({ callId, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }),
  status,
});
const outputs = (input: unknown) =>
  (input as ResponseItem[]).filter((item) => item.type === 'function_call_output').map((item) => ({ call_id: item.call_id, output: String(item.output) }));
const modes = [
  { name: 'SSE', stream: true },
  { name: 'JSON', stream: false },
];

/** Runs one turn against a scripted server and the fixture sidecar. */
async function scripted(
  steps: ScriptStep[],
  options: Partial<Omit<RunTurnOptions, 'model'>> & { modelOptions?: Partial<OpenAIResponsesModelOptions> } = {},
): Promise<{ outcome: TurnOutcome; server: ScriptedResponsesServer; events: TurnEvent[] }> {
  const server = await startScriptedResponsesServer({ steps });
  servers.push(server);
  const model = createOpenAIResponsesModel({ model: 'scripted-model', apiKey: 'test-key', baseURL: server.baseURL, maxRetries: 0, ...options.modelOptions });
  const turn = await client.openTurn({ agentId: 'agent-misbehaving', turnId: `m${++turnCounter}` }, { signal: AbortSignal.timeout(15_000) });
  const events: TurnEvent[] = [];
  try {
    const outcome = await runTurn({ model, turn, prompt: 'do it', onEvent: (event) => events.push(event), ...options });
    return { outcome, server, events };
  } finally {
    await turn.close({ timeoutMs: 5_000 });
  }
}

describe.each(modes)('a misbehaving model server ($name)', ({ stream }) => {
  it('refuses a call too large for the sidecar connection locally, and the call beside it and the turn go on', async () => {
    const huge = JSON.stringify({ content: 'x'.repeat(17 * 1024 * 1024) });
    const { outcome, server } = await scripted(
      [{ output: [call('big', 'echo', huge), call('small', 'noop')], deltaChars: 1 << 20 }, { output: [messageItem('went on')] }],
      { modelOptions: { stream } },
    );
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'went on', modelCalls: 2 });
    const [big, small] = outputs(server.requests[1]!.input);
    expect(big!.output).toMatch(/^Arguments for tool `echo` are \d+ bytes, over the 16777216-byte message limit of the tool sidecar's connection/);
    expect(small).toEqual({ call_id: 'small', output: 'ok' });
  });

  it('never runs a call cut off by the output limit, runs the complete calls beside it, and says why', async () => {
    const cut = call('c2', 'echo', '{"path":"notes.md","content":"the first forty bytes of a lo', 'incomplete');
    const { outcome, server, events } = await scripted(
      [
        {
          // The provider calls c1 complete: its unclosed object is repaired, as before.
          output: [call('c1', 'echo', '{"kept":1'), cut],
          fields: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
        },
        { output: [messageItem('retried with less')] },
      ],
      { modelOptions: { stream } },
    );
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'retried with less' });
    expect(outputs(server.requests[1]!.input)).toEqual([
      { call_id: 'c1', output: '{"kept":1}' },
      {
        call_id: 'c2',
        output:
          'This call to echo was not run: its arguments were cut off by the output limit (max_output_tokens) before they were complete. ' +
          'Call it again with less: split large content over several calls.',
      },
    ]);
    // The sidecar never saw c2: no activity started for it.
    expect(events.some((event) => event.type === 'activity-started' && event.callId === 'c2')).toBe(false);
    expect(events.find((event) => event.type === 'model-response')).toMatchObject({ status: 'incomplete', reason: 'max_output_tokens' });
  });

  it('reports an answer cut off as incomplete, with the part that came and the reason', async () => {
    const { outcome } = await scripted(
      [{ output: [messageItem('The project is a small')], fields: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } }],
      { modelOptions: { stream } },
    );
    expect(outcome).toMatchObject({ status: 'incomplete', finalText: 'The project is a small', error: "the model's answer was cut off (max_output_tokens)" });
  });

  it('ends the turn model_failed with the reason of a failed response, and runs none of its calls', async () => {
    const { outcome, server } = await scripted(
      [{ output: [call('f1', 'noop')], fields: { status: 'failed', error: { code: 'server_error', message: 'The model crashed.' } } }],
      { modelOptions: { stream } },
    );
    expect(outcome).toMatchObject({ status: 'model_failed', error: 'the model response failed: server_error: The model crashed.' });
    expect(server.requests).toHaveLength(1);
    expect(outputs(outcome.input)).toEqual([
      { call_id: 'f1', output: 'This call to noop was not run: the turn stopped because the model response failed: server_error: The model crashed.' },
    ]);
  });

  it(`queues calls beyond the sidecar's limit of ${MAX_IN_FLIGHT} in flight: none refused, the sequential order kept`, async () => {
    const first = Array.from({ length: 14 }, (_, index) => call(`p${index}`, 'sleep', { ms: 40 }));
    const later = Array.from({ length: 10 }, (_, index) => call(`q${index}`, 'sleep', { ms: 40 }));
    const { outcome, server, events } = await scripted(
      [{ output: [...first, call('s', 'sleep_sequential', { ms: 10 }), ...later] }, { output: [messageItem('all answered')] }],
      { modelOptions: { stream } },
    );
    expect(outcome.status).toBe('completed');
    const recorded = outputs(server.requests[1]!.input);
    expect(recorded.map((entry) => entry.call_id)).toEqual([...first.map((_, index) => `p${index}`), 's', ...later.map((_, index) => `q${index}`)]);
    expect(recorded.filter((entry) => entry.output !== 'slept 40 ms').map((entry) => entry.output)).toEqual(['slept 10 ms']);
    // Never more than the limit at once, and the sequential call alone between the two groups.
    let running = 0;
    let peak = 0;
    const order: string[] = [];
    for (const event of events) {
      if (event.type === 'activity-started') {
        peak = Math.max(peak, ++running);
        order.push(event.callId);
      } else if (event.type === 'activity-completed') running--;
    }
    expect(peak).toBeLessThanOrEqual(MAX_IN_FLIGHT);
    expect(peak).toBeGreaterThan(1);
    const started = events.filter((event) => event.type === 'activity-started' || event.type === 'activity-completed');
    const sStart = started.findIndex((event) => event.type === 'activity-started' && event.callId === 's');
    const sEnd = started.findIndex((event) => event.type === 'activity-completed' && event.callId === 's');
    expect(started.slice(0, sStart).filter((event) => event.type === 'activity-completed')).toHaveLength(first.length);
    expect(started.slice(sStart + 1, sEnd)).toEqual([]);
  });

  it('ends the turn with a clear reason when the server sends headers and then nothing', async () => {
    const { outcome } = await scripted(
      [
        {
          raw: (res) => {
            res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
            if (stream) res.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { id: 'r', status: 'in_progress' } })}\n\n`);
            else res.flushHeaders();
          },
        },
      ],
      { modelOptions: { stream, streamIdleTimeoutMs: 1_000 } },
    );
    expect(outcome.status).toBe('model_error');
    expect(outcome.error).toMatch(stream ? /sent nothing for 1 s after \d+ bytes \(1 event, the last response.created\): the stream stalled/ : /sent nothing for 1 s after 0 bytes: the stream stalled/);
  });

  it('ends the turn cleanly on a body that is not what it claims', async () => {
    const { outcome } = await scripted(
      [
        {
          raw: (res) => {
            res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
            res.end(stream ? 'event: response.completed\ndata: {"type": "response.completed", "respo\n\n' : '{"id": "resp_1", "output": [');
          },
        },
      ],
      { modelOptions: { stream } },
    );
    expect(outcome.status).toBe('model_error');
    expect(outcome.error).toMatch(stream ? /^the model stream sent an event that is not JSON/ : /^the model server sent a body that is not JSON \(\d+ bytes\): \{"id": "resp_1"/);
  });

  it('says the server closed the connection mid-response, and how far it had got', async () => {
    const response = buildResponse({ model: 'scripted-model', output: [messageItem('a long answer that never arrives whole')] });
    const { outcome } = await scripted(
      [
        {
          raw: (res) => {
            if (stream) {
              res.writeHead(200, { 'content-type': 'text/event-stream' });
              for (const event of responseSseEvents(response).slice(0, 5)) res.write(`event: ${event.type as string}\ndata: ${JSON.stringify(event)}\n\n`);
            } else {
              const text = JSON.stringify(response);
              res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(text.length) });
              res.write(text.slice(0, 40));
            }
            setTimeout(() => res.destroy(), 50);
          },
        },
      ],
      { modelOptions: { stream } },
    );
    expect(outcome.status).toBe('model_error');
    expect(outcome.error).toMatch(
      stream
        ? /^the model server closed the connection mid-response after \d+ bytes \(5 events, the last response.output_text.delta\) \(terminated/
        : /^the model server closed the connection mid-response after 40 bytes \(terminated/,
    );
  });
});

describe('the sidecar limit', () => {
  it('is learnt from the tool set the sidecar sends', async () => {
    const turn = await client.openTurn({ agentId: 'agent-misbehaving', turnId: `m${++turnCounter}` }, { signal: AbortSignal.timeout(15_000) });
    try {
      expect(turn.maxCallsInFlight).toBe(MAX_IN_FLIGHT);
    } finally {
      await turn.close({ timeoutMs: 5_000 });
    }
  });
});

describe('retry-after from a rate-limiting server', () => {
  const limited = (seconds: string): ScriptStep => ({ status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after': seconds } });

  it('honours a short retry-after and reports a long one as the reason, without waiting it out', async () => {
    const short = await scripted([limited('0.05'), { output: [messageItem('after the wait')] }], { modelOptions: { maxRetries: 2 } });
    expect(short.outcome).toMatchObject({ status: 'completed', finalText: 'after the wait' });
    expect(short.server.requests).toHaveLength(2);

    const long = await scripted([limited('600'), { output: [messageItem('never')] }], { modelOptions: { maxRetries: 2, maxRetryAfterMs: 30_000 } });
    expect(long.outcome.status).toBe('model_error');
    expect(long.outcome.error).toBe(
      'the model endpoint is rate limiting (429): slow down; the server asked to retry after 600 s, longer than the 30 s this controller waits (--max-retry-after-ms)',
    );
    expect(long.server.requests).toHaveLength(1);
  });

  it('stops waiting at once when the turn is aborted during a retry-after it honours', async () => {
    const controller = new AbortController();
    const pending = scripted([limited('600'), { output: [messageItem('never')] }], { signal: controller.signal, modelOptions: { maxRetries: 2, maxRetryAfterMs: 3_600_000 } });
    const before = servers.length;
    while (servers.length === before || servers.at(-1)!.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort(new Error('interrupted'));
    // Without the abortable wait this would sleep 600 s, far past the test's timeout.
    const { outcome, server } = await pending;
    expect(outcome).toMatchObject({ status: 'aborted', modelCalls: 0 });
    expect(server.requests).toHaveLength(1);
  });
});
