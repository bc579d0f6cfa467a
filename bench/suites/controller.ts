// What the controller's loop costs per tool call, on top of the wire. A turn runs against a
// minimal in-process Responses server (one response with N parallel `noop` calls, then a final
// message) and the fixture sidecar child (`noop` returns 'ok'), so neither the model nor the tool
// does any work; the server times its own handling of each request and that time is subtracted.
// Beside each turn, in the same iteration, the wire floor of the same work: the turn's request
// bodies replayed over raw HTTP and N noop calls sent over a Turn stream with the generated client.
// Also kept: a whole `npm start`-style turn (embedded model, real sidecar), and schema collection
// for 1,000 tools.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { collectProviderTools } from '../../controller/loop/collect-provider-tools.js';
import { runTurn } from '../../controller/loop/run-turn.js';
import { createToolCatalog } from '../../controller/loop/tool-catalog.js';
import { startEmbeddedModel } from '../../controller/model/embedded-model.js';
import { createOpenAIResponsesModel } from '../../controller/model/openai-responses-model.js';
import type { ModelRequest, ResponseItem, ResponsesModel } from '../../controller/model/responses-model.js';
import { buildResponse, functionCallItem, messageItem, readJsonBody, responseSseEvents, writeJson, writeSse } from '../../controller/model/responses-wire.js';
import { createSidecarClient, type SidecarClient } from '../../controller/sidecar-client/create-sidecar-client.js';
import type { ToolDefinition } from '../../controller/sidecar-client/sidecar-types.js';
import { spawnSidecar } from '../../controller/sidecar-client/spawn-sidecar.js';
import { ToolSidecarServiceClient, TurnKind, type TurnResponse } from '../../src/gen/toolruntime/v1/sidecar.js';
import { startSidecar } from '../../test/fixtures/start-sidecar.js';
import { quantile, type BenchRow } from '../bench-row.js';
import { localTokenOptions } from '../../test/integration/sidecar/turn-driver.js';

const CALL_COUNTS = [1, 32];
const NOOP_TURNS = 100;
const NOOP_WARM_UP = 10;
const EMBEDDED_TURNS = 12;
const EMBEDDED_WARM_UP = 2;
const RAW_ROUND_TRIPS = 400;

/** The noop model: `model: "noop-N"` answers N parallel noop calls, then (once outputs came back) a message. */
async function startNoopModel(): Promise<{ baseURL: string; serverMs: () => number; close: () => Promise<void> }> {
  let serverMs = 0;
  const server: Server = createServer((req, res) => {
    const start = performance.now();
    res.once('finish', () => (serverMs += performance.now() - start));
    readJsonBody(req)
      .then((raw) => {
        const body = raw as { model?: string; input?: ResponseItem[]; stream?: boolean };
        const calls = Number(/^noop-(\d+)$/.exec(body.model ?? '')?.[1] ?? Number.NaN);
        if (!Number.isInteger(calls) || !Array.isArray(body.input)) {
          writeJson(res, 400, { error: { message: 'the noop model wants model "noop-N" and an input array', type: 'invalid_request_error' } });
          return;
        }
        const answered = body.input.some((item) => item.type === 'function_call_output');
        const output = answered
          ? [messageItem('done')]
          : Array.from({ length: calls }, (_, index) => functionCallItem({ callId: `call_${index}`, name: 'noop', arguments: '{}' }));
        const response = buildResponse({ model: body.model ?? 'noop', output });
        if (body.stream === true) writeSse(res, responseSseEvents(response));
        else writeJson(res, 200, response);
      })
      .catch((error: unknown) => writeJson(res, 400, { error: { message: String(error) } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    serverMs: () => serverMs,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A model that records the bodies the loop asked for, to replay them over raw HTTP. */
function recording(inner: ResponsesModel, recorded: ModelRequest[]): ResponsesModel {
  return {
    description: inner.description,
    create(request, options) {
      recorded.push({ ...request, input: [...request.input] });
      return inner.create(request, options);
    },
  };
}

/** POSTs `body` to the Responses endpoint and reads the answer to its end; returns ms. */
async function rawPost(baseURL: string, body: string): Promise<number> {
  const start = performance.now();
  const response = await fetch(`${baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(30_000) });
  await response.text();
  if (!response.ok) throw new Error(`raw POST answered ${response.status}`);
  return performance.now() - start;
}

/** A Turn stream opened with the generated client directly: `burst(n)` sends n noop calls and waits for every result. */
async function rawTurn(address: string): Promise<{ burst: (calls: number) => Promise<number>; close: () => void }> {
  const client = new ToolSidecarServiceClient(address, grpc.credentials.createInsecure(), localTokenOptions(address));
  const stream = client.turn();
  let next = 0;
  let remaining = 0;
  let done: () => void = () => {};
  let ready!: () => void;
  const opened = new Promise<void>((resolve) => (ready = resolve));
  stream.on('data', (message: TurnResponse) => {
    if (message.event?.$case === 'toolSet') ready();
    else if (message.event?.$case === 'result' && --remaining === 0) done();
  });
  stream.on('error', () => {});
  stream.write({
    request: { $case: 'open', value: { context: { agentId: 'bench', turnId: 'raw', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: false, approvalPolicy: undefined, sandbox: undefined } } },
  });
  await opened;
  return {
    async burst(calls) {
      const start = performance.now();
      const finished = new Promise<void>((resolve) => (done = resolve));
      remaining = calls;
      for (let index = 0; index < calls; index++) {
        stream.write({ request: { $case: 'call', value: { callId: `r${next++}`, name: 'noop', namespace: '', argumentsJson: '{}', deadlineMs: 0, traceparent: '', tracestate: '' } } });
      }
      await finished;
      return performance.now() - start;
    },
    close() {
      stream.end();
      client.close();
    },
  };
}

/** Per-call overhead rows for one (calls, stream) configuration. */
async function noopConfiguration(options: {
  calls: number;
  stream: boolean;
  client: SidecarClient;
  noop: Awaited<ReturnType<typeof startNoopModel>>;
  raw: Awaited<ReturnType<typeof rawTurn>>;
}): Promise<BenchRow> {
  const { calls, stream, client, noop, raw } = options;
  const recorded: ModelRequest[] = [];
  const model = recording(createOpenAIResponsesModel({ model: `noop-${calls}`, apiKey: 'none', baseURL: noop.baseURL, stream, maxRetries: 0 }), recorded);
  const loopPerCall: number[] = [];
  const floorPerCall: number[] = [];
  for (let index = 0; index < NOOP_WARM_UP + NOOP_TURNS; index++) {
    recorded.length = 0;
    const turn = await client.openTurn({ agentId: 'bench', turnId: `noop-${calls}-${index}` });
    const serverBefore = noop.serverMs();
    const start = performance.now();
    const outcome = await runTurn({ model, turn, prompt: 'Call noop.', signal: AbortSignal.timeout(30_000) });
    const turnMs = performance.now() - start;
    const turnServerMs = noop.serverMs() - serverBefore;
    await turn.close();
    if (outcome.status !== 'completed' || outcome.modelCalls !== 2) throw new Error(`noop bench turn ended ${outcome.status} after ${outcome.modelCalls} model calls: ${outcome.error}`);
    const outputs = outcome.input.filter((item) => item.type === 'function_call_output' && item.output === 'ok').length;
    if (outputs !== calls) throw new Error(`noop bench turn got ${outputs} ok outputs for ${calls} calls`);

    // The wire floor of the same turn: its two bodies over raw HTTP, and N raw noop calls.
    const floorServerBefore = noop.serverMs();
    let floorMs = 0;
    for (const request of recorded) {
      const body = JSON.stringify({ model: `noop-${calls}`, ...request, store: false, stream });
      floorMs += await rawPost(noop.baseURL, body);
    }
    floorMs += await raw.burst(calls);
    const floorServerMs = noop.serverMs() - floorServerBefore;
    if (index < NOOP_WARM_UP) continue;
    loopPerCall.push(((turnMs - turnServerMs) * 1000) / calls);
    floorPerCall.push(((floorMs - floorServerMs) * 1000) / calls);
  }
  const loop = quantile(loopPerCall, 0.5);
  const floor = quantile(floorPerCall, 0.5);
  return {
    suite: 'controller',
    name: `loop overhead per call, ${calls} parallel noop call${calls === 1 ? '' : 's'}, ${stream ? 'SSE' : 'JSON'} (turn − model-server time) / calls`,
    value: loop,
    unit: 'µs p50',
    reference: 'wire floor per call: same bodies over raw HTTP + raw noop calls over Turn',
    ratio: loop / floor,
    note: `floor ${floor.toFixed(0)} µs; the loop adds ${(loop - floor).toFixed(0)} µs per call`,
  };
}

function thousandTools(): ToolDefinition[] {
  return Array.from({ length: 1_000 }, (_, index) => {
    const parameters = {
      type: 'object',
      properties: { path: { type: 'string', description: 'A path.' }, limit: { type: 'integer', minimum: 1, maximum: 100 } },
      required: ['path'],
      additionalProperties: false,
    };
    return {
      name: `tool_${index}`,
      description: `Tool number ${index}: does one small thing with a path.`,
      parameters,
      parametersJson: JSON.stringify(parameters),
      strict: index % 2 === 0,
      ...(index % 10 === 0 ? {} : { namespace: `ns_${index % 10}`, namespaceDescription: `Namespace ${index % 10}.` }),
      deferLoading: index % 3 === 0,
      executionMode: 'parallel',
      readOnly: true,
      destructive: false,
    };
  });
}

function timeMicros(fn: () => void, rounds: number): number[] {
  for (let index = 0; index < 20; index++) fn();
  const samples: number[] = [];
  for (let index = 0; index < rounds; index++) {
    const start = performance.now();
    fn();
    samples.push((performance.now() - start) * 1000);
  }
  return samples;
}

/** The whole turn `npm start` runs: embedded model, real sidecar, real tools. */
async function embeddedTurn(): Promise<BenchRow[]> {
  const workspace = mkdtempSync(join(tmpdir(), 'bench-controller-'));
  cpSync(fileURLToPath(new URL('../../controller/sample-workspace/', import.meta.url)), workspace, { recursive: true });
  const stateDir = mkdtempSync(join(tmpdir(), 'bench-controller-state-'));
  const sidecar = await spawnSidecar({ workspace, extraArgs: ['--state-dir', stateDir] });
  const embedded = await startEmbeddedModel();
  const client = createSidecarClient({ address: sidecar.address, token: sidecar.token });
  try {
    const recorded: ModelRequest[] = [];
    const model = recording(createOpenAIResponsesModel({ model: 'embedded', apiKey: 'none', baseURL: embedded.baseURL, stream: true, maxRetries: 0 }), recorded);
    const turnMs: number[] = [];
    const replayMs: number[] = [];
    let calls = 0;
    for (let index = 0; index < EMBEDDED_WARM_UP + EMBEDDED_TURNS; index++) {
      recorded.length = 0;
      const turn = await client.openTurn({ agentId: `bench-${index}`, turnId: `bench-${index}` });
      const start = performance.now();
      const outcome = await runTurn({ model, turn, prompt: 'Describe this project.', signal: AbortSignal.timeout(60_000) });
      const elapsed = performance.now() - start;
      await turn.close();
      if (outcome.status !== 'completed') throw new Error(`bench turn ended ${outcome.status}: ${outcome.error}`);
      calls = outcome.input.filter((item) => item.type === 'function_call_output').length;
      let replay = 0;
      for (const request of recorded) replay += await rawPost(embedded.baseURL, JSON.stringify({ model: 'embedded', ...request, store: false, stream: true }));
      if (index < EMBEDDED_WARM_UP) continue;
      turnMs.push(elapsed);
      replayMs.push(replay);
    }
    const turnP50 = quantile(turnMs, 0.5);
    const replayP50 = quantile(replayMs, 0.5);
    return [
      {
        suite: 'controller',
        name: `whole turn, embedded model + real sidecar (${calls} real tool calls, ${recorded.length} model calls)`,
        value: turnP50,
        unit: 'ms p50',
        reference: 'the same model bodies over raw HTTP, summed',
        ratio: turnP50 / replayP50,
        note: `reference ${replayP50.toFixed(1)} ms; the rest is the tools' own work, the sidecar and the loop`,
      },
    ];
  } finally {
    client.close();
    await embedded.close();
    await sidecar.stop();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** Runs the controller bench. */
export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'bench-controller-noop-'));
  const sidecar = await startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--workspace', dir, '--state-dir', join(dir, 'state'), '--log-level', 'warn'] });
  const noop = await startNoopModel();
  const client = createSidecarClient({ address: sidecar.address });
  const raw = await rawTurn(sidecar.address);
  try {
    // References: one raw noop call over Turn, one raw HTTP round trip (a one-call response).
    const sidecarRtt: number[] = [];
    const httpRtt: number[] = [];
    const smallBody = JSON.stringify({ model: 'noop-1', input: [{ type: 'message', role: 'user', content: 'Call noop.' }], store: false, stream: true });
    for (let index = 0; index < RAW_ROUND_TRIPS + 50; index++) {
      const call = (await raw.burst(1)) * 1000;
      const http = (await rawPost(noop.baseURL, smallBody)) * 1000;
      if (index < 50) continue;
      sidecarRtt.push(call);
      httpRtt.push(http);
    }
    const sidecarP50 = quantile(sidecarRtt, 0.5);
    const httpP50 = quantile(httpRtt, 0.5);
    rows.push({ suite: 'controller', name: 'reference: raw noop call over Turn (generated client), p50', value: sidecarP50, unit: 'µs' });
    rows.push({ suite: 'controller', name: 'reference: raw HTTP round trip, one-call SSE response, p50', value: httpP50, unit: 'µs' });
    for (const calls of CALL_COUNTS) {
      for (const stream of [true, false]) rows.push(await noopConfiguration({ calls, stream, client, noop, raw }));
    }
  } finally {
    raw.close();
    client.close();
    await noop.close();
    await sidecar.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  rows.push(...(await embeddedTurn()));

  const tools = thousandTools();
  const collect = timeMicros(() => collectProviderTools(tools, { toolSearch: 'hosted', flattenNamespaces: false }), 200);
  const stringify = timeMicros(() => JSON.stringify(tools), 200);
  const collectP50 = quantile(collect, 0.5);
  const stringifyP50 = quantile(stringify, 0.5);
  rows.push({
    suite: 'controller',
    name: 'schema collection, 1,000 tools (namespaces, deferred; objects, not serialized)',
    value: collectP50,
    unit: 'µs p50',
    reference: 'JSON.stringify of the same tools p50',
    ratio: collectP50 / stringifyP50,
    note: `reference ${stringifyP50.toFixed(0)} µs`,
  });
  const catalog = createToolCatalog({ tools, toolSearch: 'client', flattenNamespaces: false });
  const perIteration = quantile(timeMicros(() => catalog.providerTools(), 2_000), 0.5);
  rows.push({
    suite: 'controller',
    name: 'tool list per model call after collection, 1,000 tools (catalog.providerTools)',
    value: perIteration,
    unit: 'µs p50',
    reference: 'schema collection p50',
    ratio: perIteration / collectP50,
    note: 'per-iteration work once the turn collected its schemas',
  });
  return rows;
}
