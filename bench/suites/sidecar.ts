// The sidecar's full call path over the Turn stream (repair, validation, scheduling, labels,
// result), beside references measured in the same run: raw grpc-js between two Node processes,
// the protocol floor (a Turn server with no logic: ts-proto in, activity_started + result out,
// written as the sidecar writes them, and the same client as the sidecar's), the same floor with
// the result alone, and the MCP TypeScript SDK over stdio (what a tool server usually is). The
// sidecar's own path (request decoded → both responses encoded) is also timed in-process.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startSidecar } from '../../test/fixtures/start-sidecar.js';
import { createFixtureCatalogs } from '../../test/fixtures/fixture-categories.js';
import { defaultSidecarLimits } from '../../sidecar/sidecar-limits.js';
import { encodeTurnResponse } from '../../sidecar/grpc/encode-turn-response.js';
import { toTurnResponse } from '../../sidecar/grpc/proto-mapping.js';
import { createTurnSession } from '../../sidecar/turn/turn-session.js';
import { createJsonLogger } from '../../src/index.js';
import { ToolSidecarServiceClient, TurnKind, type TurnRequest, type TurnResponse } from '../../src/gen/toolruntime/v1/sidecar.js';
import { quantile, type BenchRow } from '../bench-row.js';
import { rawService } from '../fixtures/raw-grpc-service.js';
import { localTokenOptions } from '../../test/integration/sidecar/turn-driver.js';

// Every process needs thousands of calls before V8 has optimised its path (a fresh sidecar child
// answered its first 500 noop calls at ~450 µs p50 and settled at ~70 µs after ~5,000): each
// target gets the same warm-up, then samples are taken in interleaved rounds so the shared
// machine's noise falls on every target alike. The cold figure has its own row.
const ROUND_TRIPS = 3_000;
const ROUNDS = 5;
const WARM_UP = 6_000;
const COLD = 500;
const IN_FLIGHT = 64;
const THROUGHPUT_MS = 2_000;
const EVENTS = 20_000;
const root = fileURLToPath(new URL('../../', import.meta.url));

type Exchange = (message: Buffer | TurnRequest) => void;

type Send = (index: number) => Promise<void>;

/** Sequential round trips on one target: send one, wait for its answer; microsecond samples. */
async function roundTrips(send: Send, from: number, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let index = from; index < from + count; index++) {
    const start = performance.now();
    await send(index);
    samples.push((performance.now() - start) * 1000);
  }
  return samples;
}

/**
 * Sequential round trips on every target: the first `COLD` calls of each (its cold samples), the
 * rest of `WARM_UP`, then `ROUNDS` interleaved rounds of `ROUND_TRIPS / ROUNDS` samples each.
 */
async function pingPong<K extends string>(targets: Record<K, Send>): Promise<Record<K, { warm: number[]; cold: number[] }>> {
  const names = Object.keys(targets) as K[];
  const out = {} as Record<K, { warm: number[]; cold: number[] }>;
  for (const name of names) {
    const cold = await roundTrips(targets[name], 0, COLD);
    await roundTrips(targets[name], COLD, WARM_UP - COLD);
    out[name] = { cold, warm: [] };
  }
  const perRound = Math.ceil(ROUND_TRIPS / ROUNDS);
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of names) out[name].warm.push(...(await roundTrips(targets[name], WARM_UP + round * perRound, perRound)));
  }
  return out;
}

/** Keeps `IN_FLIGHT` requests outstanding for a while; returns completions per second. */
async function throughput(send: (index: number) => Promise<void>): Promise<number> {
  let next = 1_000_000;
  let done = 0;
  const until = performance.now() + THROUGHPUT_MS;
  const start = performance.now();
  const worker = async () => {
    while (performance.now() < until) {
      await send(next++);
      done++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return (done * 1000) / (performance.now() - start);
}

/** A bidi stream whose answers are matched to requests by a key. */
function matcher<T>(keyOf: (message: T) => string | undefined) {
  const waiting = new Map<string, () => void>();
  return {
    wait: (key: string) => new Promise<void>((resolve) => waiting.set(key, resolve)),
    onData: (message: T) => {
      const key = keyOf(message);
      if (key === undefined) return;
      const resolve = waiting.get(key);
      waiting.delete(key);
      resolve?.();
    },
  };
}

/** Opens a Turn on `address` with the generated client and returns a noop-call sender. */
async function openTurn(address: string) {
  const client = new ToolSidecarServiceClient(address, grpc.credentials.createInsecure(), localTokenOptions(address));
  const turn = client.turn();
  const turnMatch = matcher<TurnResponse>((message) => (message.event?.$case === 'result' ? message.callId : undefined));
  let toolSetReady!: () => void;
  const opened = new Promise<void>((resolve) => (toolSetReady = resolve));
  turn.on('data', (message: TurnResponse) => (message.event?.$case === 'toolSet' ? toolSetReady() : turnMatch.onData(message)));
  turn.write({
    request: { $case: 'open', value: { context: { agentId: 'bench', turnId: 'bench', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: false, approvalPolicy: undefined, sandbox: undefined } } },
  });
  await opened;
  const send = (index: number) => {
    const callId = `c${index}`;
    const answered = turnMatch.wait(callId);
    turn.write({ request: { $case: 'call', value: { callId, name: 'noop', namespace: '', argumentsJson: '{}', deadlineMs: 0, traceparent: '', tracestate: '' } } });
    return answered;
  };
  const close = () => {
    turn.end();
    client.close();
  };
  return { client, turn, send, close };
}

/**
 * The sidecar's own per-call work, in-process: from the decoded call handed to the session to
 * both responses encoded to bytes (what the Turn handler then gives grpc-js), waiting the way the
 * handler waits (readable, then the tick's microtasks). Returns microsecond samples.
 */
async function ownPath(): Promise<number[]> {
  const catalogs = createFixtureCatalogs();
  const tools = (await catalogs.text[0]!({} as never)) as Parameters<typeof createTurnSession>[0]['tools'];
  const session = createTurnSession({ tools, limits: defaultSidecarLimits, logger: createJsonLogger({ level: 'warn' }) });
  const signal = new AbortController().signal;
  const samples: number[] = [];
  for (let index = 0; index < WARM_UP + ROUND_TRIPS; index++) {
    const start = performance.now();
    session.call({ callId: `c${index}`, name: 'noop', namespace: '', argumentsJson: '{}', deadlineMs: 0 });
    let results = 0;
    while (results === 0) {
      await session.events.readable(signal);
      await new Promise((resolve) => process.nextTick(resolve));
      for (let event = session.events.take(); event !== undefined; event = session.events.take()) {
        encodeTurnResponse(toTurnResponse(event));
        if (event.type === 'result') results++;
      }
    }
    if (index >= WARM_UP) samples.push((performance.now() - start) * 1000);
  }
  session.endInput();
  return samples;
}

export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-sidecar-'));
  const sidecar = await startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--workspace', dir, '--state-dir', join(dir, 'state'), '--log-level', 'warn'] });
  const raw = await startSidecar({ entry: 'bench/fixtures/raw-grpc-server.ts', args: [] });
  const floor = await startSidecar({ entry: 'bench/fixtures/protocol-floor-server.ts', args: [] });
  const floorOne = await startSidecar({ entry: 'bench/fixtures/protocol-floor-server.ts', args: ['--one-message'] });
  const mcp = new McpClient({ name: 'bench', version: '1.0.0' });
  const mcpTransport = new StdioClientTransport({ command: `${root}node_modules/.bin/tsx`, args: [`${root}bench/fixtures/mcp-noop-server.ts`], cwd: root, stderr: 'inherit' });
  try {
    await mcp.connect(mcpTransport);
    // Raw grpc-js: bidi ping-pong, unary, and a server stream.
    const RawClient = grpc.makeGenericClientConstructor(rawService, 'Raw');
    const rawClient = new RawClient(raw.address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
    const rawStream = rawClient.PingPong() as grpc.ClientDuplexStream<Buffer, Buffer>;
    const rawMatch = matcher<Buffer>((message) => String(message.readUInt32BE(0)));
    rawStream.on('data', rawMatch.onData);
    const payload = Buffer.alloc(64, 1);
    const rawSend = (index: number) => {
      const message = Buffer.from(payload);
      message.writeUInt32BE(index, 0);
      const answered = rawMatch.wait(String(index));
      (rawStream.write as Exchange)(message);
      return answered;
    };
    const rawUnary = (index: number) =>
      new Promise<void>((resolve, reject) => {
        const message = Buffer.from(payload);
        message.writeUInt32BE(index, 0);
        rawClient.Unary(message, (error: Error | null) => (error ? reject(error) : resolve()));
      });

    // The sidecar, and the protocol floor with both messages and with the result alone: one Turn each, noop calls.
    const sidecarTurn = await openTurn(sidecar.address);
    const floorTurn = await openTurn(floor.address);
    const floorOneTurn = await openTurn(floorOne.address);
    const { turn } = sidecarTurn;
    const sidecarSend = sidecarTurn.send;

    // MCP over stdio: the SDK's Client calling the SDK's server child.
    const mcpSend = async () => {
      const result = await mcp.callTool({ name: 'noop', arguments: {} });
      if (result.isError) throw new Error(`the MCP noop tool failed: ${JSON.stringify(result.content)}`);
    };

    const trips = await pingPong({ raw: rawSend, unary: rawUnary, sidecar: sidecarSend, floor: floorTurn.send, floorOne: floorOneTurn.send, mcp: mcpSend });
    const rawSamples = trips.raw.warm;
    const unarySamples = trips.unary.warm;
    const sidecarSamples = trips.sidecar.warm;
    const floorSamples = trips.floor.warm;
    const floorOneSamples = trips.floorOne.warm;
    const mcpSamples = trips.mcp.warm;
    const ownSamples = await ownPath();
    const rawRate = await throughput(rawSend);
    const sidecarRate = await throughput(sidecarSend);
    const floorRate = await throughput(floorTurn.send);
    const mcpRate = await throughput(mcpSend);

    // Streamed events: raw server stream vs the `emit` fixture through the Turn.
    const rawEvents = await new Promise<{ perSecond: number; inOrder: number; received: number }>((resolve, reject) => {
      const request = Buffer.alloc(4);
      request.writeUInt32BE(EVENTS, 0);
      const start = performance.now();
      let received = 0;
      let inOrder = 0;
      const stream = rawClient.Stream(request) as grpc.ClientReadableStream<Buffer>;
      stream.on('data', (message: Buffer) => {
        if (message.readUInt32BE(0) === received) inOrder++;
        received++;
      });
      stream.on('error', reject);
      stream.on('end', () => resolve({ perSecond: (received * 1000) / (performance.now() - start), inOrder, received }));
    });
    const sidecarEvents = await new Promise<{ perSecond: number; inOrder: number; received: number }>((resolve, reject) => {
      let received = 0;
      let inOrder = 0;
      const start = performance.now();
      const onData = (message: TurnResponse) => {
        if (message.callId !== 'events') return;
        if (message.event?.$case === 'presentation' && message.event.value.kind === 'fixture.tick') {
          if ((JSON.parse(message.event.value.payloadJson) as { index: number }).index === received) inOrder++;
          received++;
        } else if (message.event?.$case === 'result') {
          turn.off('data', onData);
          if (message.event.value.error) reject(new Error(`the emit_paced call failed: ${message.event.value.error.message}`));
          resolve({ perSecond: (received * 1000) / (performance.now() - start), inOrder, received });
        }
      };
      turn.on('data', onData);
      // emit_paced awaits each emit, as a tool that streams a lot should.
      turn.write({ request: { $case: 'call', value: { callId: 'events', name: 'emit_paced', namespace: '', argumentsJson: JSON.stringify({ count: EVENTS }), deadlineMs: 0, traceparent: '', tracestate: '' } } });
    });
    const order = (events: { inOrder: number; received: number }) =>
      events.inOrder === EVENTS && events.received === EVENTS ? `all ${EVENTS} in order` : `LOSS: ${events.received}/${EVENTS} received, ${events.inOrder} in order`;

    sidecarTurn.close();
    floorTurn.close();
    floorOneTurn.close();
    rawStream.end();
    rawClient.close();

    const p50 = quantile(sidecarSamples, 0.5);
    const rawP50 = quantile(rawSamples, 0.5);
    const mcpP50 = quantile(mcpSamples, 0.5);
    const floorP50 = quantile(floorSamples, 0.5);
    const floorOneP50 = quantile(floorOneSamples, 0.5);
    return [
      { suite: 'sidecar', name: 'noop call round trip over Turn, p50', value: p50, unit: 'µs', reference: `raw grpc-js bidi ping-pong p50 ${rawP50.toFixed(0)} µs`, ratio: p50 / rawP50, note: 'goal ≤ 1.25×' },
      { suite: 'sidecar', name: 'noop call round trip over Turn, p50', value: p50, unit: 'µs', reference: `protocol floor p50 ${floorP50.toFixed(0)} µs`, ratio: p50 / floorP50, note: 'the sidecar\'s own share' },
      { suite: 'sidecar', name: 'protocol floor round trip, p50', value: floorP50, unit: 'µs', reference: `raw grpc-js bidi ping-pong p50 ${rawP50.toFixed(0)} µs`, ratio: floorP50 / rawP50, note: 'ts-proto both ways, two responses per call, no logic' },
      { suite: 'sidecar', name: 'protocol floor, result alone, p50', value: floorOneP50, unit: 'µs', reference: `protocol floor p50 ${floorP50.toFixed(0)} µs`, ratio: floorOneP50 / floorP50, note: 'what the second message (activity_started) costs' },
      { suite: 'sidecar', name: 'sidecar own path in-process, p50', value: quantile(ownSamples, 0.5), unit: 'µs', reference: `sidecar round trip p50 ${p50.toFixed(0)} µs`, ratio: quantile(ownSamples, 0.5) / p50, note: 'call decoded → both responses encoded' },
      { suite: 'sidecar', name: 'noop call round trip over Turn, p50', value: p50, unit: 'µs', reference: `MCP SDK over stdio p50 ${mcpP50.toFixed(0)} µs`, ratio: p50 / mcpP50, note: 'lower is better' },
      { suite: 'sidecar', name: 'noop call round trip over Turn, p99', value: quantile(sidecarSamples, 0.99), unit: 'µs', reference: `raw bidi p99 ${quantile(rawSamples, 0.99).toFixed(0)} µs`, ratio: quantile(sidecarSamples, 0.99) / quantile(rawSamples, 0.99) },
      { suite: 'sidecar', name: `noop call round trip over Turn, first ${COLD} calls, p50`, value: quantile(trips.sidecar.cold, 0.5), unit: 'µs', reference: `protocol floor's first ${COLD} p50 ${quantile(trips.floor.cold, 0.5).toFixed(0)} µs`, ratio: quantile(trips.sidecar.cold, 0.5) / quantile(trips.floor.cold, 0.5), note: 'a fresh child, before V8 optimised it' },
      { suite: 'sidecar', name: 'raw grpc-js unary call, p50', value: quantile(unarySamples, 0.5), unit: 'µs', reference: 'raw bidi ping-pong p50', ratio: quantile(unarySamples, 0.5) / rawP50 },
      { suite: 'sidecar', name: 'MCP SDK noop call over stdio, p50', value: mcpP50, unit: 'µs', reference: 'raw bidi ping-pong p50', ratio: mcpP50 / rawP50 },
      { suite: 'sidecar', name: `noop calls/s, ${IN_FLIGHT} in flight`, value: sidecarRate, unit: 'calls/s', reference: `raw bidi ${Math.round(rawRate)} calls/s`, ratio: sidecarRate / rawRate, note: 'higher is better; goal ≥ 0.7×' },
      { suite: 'sidecar', name: `noop calls/s, ${IN_FLIGHT} in flight`, value: sidecarRate, unit: 'calls/s', reference: `protocol floor ${Math.round(floorRate)} calls/s`, ratio: sidecarRate / floorRate, note: 'higher is better' },
      { suite: 'sidecar', name: `noop calls/s, ${IN_FLIGHT} in flight`, value: sidecarRate, unit: 'calls/s', reference: `MCP SDK over stdio ${Math.round(mcpRate)} calls/s`, ratio: sidecarRate / mcpRate, note: 'higher is better; goal > 1×' },
      { suite: 'sidecar', name: `MCP SDK noop calls/s over stdio, ${IN_FLIGHT} in flight`, value: mcpRate, unit: 'calls/s', reference: `raw bidi ${Math.round(rawRate)} calls/s`, ratio: mcpRate / rawRate },
      { suite: 'sidecar', name: `presentation events/s (${EVENTS} from one call)`, value: sidecarEvents.perSecond, unit: 'events/s', reference: `raw server stream ${Math.round(rawEvents.perSecond)} events/s`, ratio: sidecarEvents.perSecond / rawEvents.perSecond, note: `sidecar: ${order(sidecarEvents)}; raw: ${order(rawEvents)}` },
    ];
  } finally {
    await mcp.close().catch(() => undefined);
    await Promise.all([sidecar.stop(), raw.stop(), floor.stop(), floorOne.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
}
