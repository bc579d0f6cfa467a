// The sidecar's full call path over the Turn stream (repair, validation, scheduling, labels,
// result), beside two references measured in the same run: raw grpc-js between two Node
// processes (the floor), and the MCP TypeScript SDK over stdio (what a tool server usually is).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startSidecar } from '../../test/fixtures/start-sidecar.js';
import { ToolSidecarServiceClient, TurnKind, type TurnRequest, type TurnResponse } from '../../src/gen/toolruntime/v1/sidecar.js';
import { quantile, type BenchRow } from '../bench-row.js';
import { rawService } from '../fixtures/raw-grpc-service.js';

const ROUND_TRIPS = 3_000;
const WARM_UP = 300;
const IN_FLIGHT = 64;
const THROUGHPUT_MS = 2_000;
const EVENTS = 20_000;
const root = fileURLToPath(new URL('../../', import.meta.url));

type Exchange = (message: Buffer | TurnRequest) => void;

/** Sequential round trips: send one, wait for its answer; returns microsecond samples. */
async function pingPong(send: (index: number) => Promise<void>): Promise<number[]> {
  for (let index = 0; index < WARM_UP; index++) await send(index);
  const samples: number[] = [];
  for (let index = WARM_UP; index < WARM_UP + ROUND_TRIPS; index++) {
    const start = performance.now();
    await send(index);
    samples.push((performance.now() - start) * 1000);
  }
  return samples;
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

export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-sidecar-'));
  const sidecar = await startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--workspace', dir, '--state-dir', join(dir, 'state'), '--log-level', 'warn'] });
  const raw = await startSidecar({ entry: 'bench/fixtures/raw-grpc-server.ts', args: [] });
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

    // The sidecar: one Turn, noop calls.
    const client = new ToolSidecarServiceClient(sidecar.address, grpc.credentials.createInsecure());
    const turn = client.turn();
    const turnMatch = matcher<TurnResponse>((message) => (message.event?.$case === 'result' ? message.callId : undefined));
    let toolSetReady!: () => void;
    const opened = new Promise<void>((resolve) => (toolSetReady = resolve));
    turn.on('data', (message: TurnResponse) => (message.event?.$case === 'toolSet' ? toolSetReady() : turnMatch.onData(message)));
    turn.write({
      request: { $case: 'open', value: { context: { agentId: 'bench', turnId: 'bench', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {} } } },
    });
    await opened;
    const sidecarSend = (index: number) => {
      const callId = `c${index}`;
      const answered = turnMatch.wait(callId);
      turn.write({ request: { $case: 'call', value: { callId, name: 'noop', namespace: '', argumentsJson: '{}', deadlineMs: 0 } } });
      return answered;
    };

    // MCP over stdio: the SDK's Client calling the SDK's server child.
    const mcpSend = async () => {
      const result = await mcp.callTool({ name: 'noop', arguments: {} });
      if (result.isError) throw new Error(`the MCP noop tool failed: ${JSON.stringify(result.content)}`);
    };

    const rawSamples = await pingPong(rawSend);
    const unarySamples = await pingPong(rawUnary);
    const sidecarSamples = await pingPong(sidecarSend);
    const mcpSamples = await pingPong(mcpSend);
    const rawRate = await throughput(rawSend);
    const sidecarRate = await throughput(sidecarSend);
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
      turn.write({ request: { $case: 'call', value: { callId: 'events', name: 'emit_paced', namespace: '', argumentsJson: JSON.stringify({ count: EVENTS }), deadlineMs: 0 } } });
    });
    const order = (events: { inOrder: number; received: number }) =>
      events.inOrder === EVENTS && events.received === EVENTS ? `all ${EVENTS} in order` : `LOSS: ${events.received}/${EVENTS} received, ${events.inOrder} in order`;

    turn.end();
    rawStream.end();
    client.close();
    rawClient.close();

    const p50 = quantile(sidecarSamples, 0.5);
    const rawP50 = quantile(rawSamples, 0.5);
    const mcpP50 = quantile(mcpSamples, 0.5);
    return [
      { suite: 'sidecar', name: 'noop call round trip over Turn, p50', value: p50, unit: 'µs', reference: `raw grpc-js bidi ping-pong p50 ${rawP50.toFixed(0)} µs`, ratio: p50 / rawP50, note: 'goal ≤ 1.25×' },
      { suite: 'sidecar', name: 'noop call round trip over Turn, p50', value: p50, unit: 'µs', reference: `MCP SDK over stdio p50 ${mcpP50.toFixed(0)} µs`, ratio: p50 / mcpP50, note: 'lower is better' },
      { suite: 'sidecar', name: 'noop call round trip over Turn, p99', value: quantile(sidecarSamples, 0.99), unit: 'µs', reference: `raw bidi p99 ${quantile(rawSamples, 0.99).toFixed(0)} µs`, ratio: quantile(sidecarSamples, 0.99) / quantile(rawSamples, 0.99) },
      { suite: 'sidecar', name: 'raw grpc-js unary call, p50', value: quantile(unarySamples, 0.5), unit: 'µs', reference: 'raw bidi ping-pong p50', ratio: quantile(unarySamples, 0.5) / rawP50 },
      { suite: 'sidecar', name: 'MCP SDK noop call over stdio, p50', value: mcpP50, unit: 'µs', reference: 'raw bidi ping-pong p50', ratio: mcpP50 / rawP50 },
      { suite: 'sidecar', name: `noop calls/s, ${IN_FLIGHT} in flight`, value: sidecarRate, unit: 'calls/s', reference: `raw bidi ${Math.round(rawRate)} calls/s`, ratio: sidecarRate / rawRate, note: 'higher is better; goal ≥ 0.7×' },
      { suite: 'sidecar', name: `noop calls/s, ${IN_FLIGHT} in flight`, value: sidecarRate, unit: 'calls/s', reference: `MCP SDK over stdio ${Math.round(mcpRate)} calls/s`, ratio: sidecarRate / mcpRate, note: 'higher is better; goal > 1×' },
      { suite: 'sidecar', name: `MCP SDK noop calls/s over stdio, ${IN_FLIGHT} in flight`, value: mcpRate, unit: 'calls/s', reference: `raw bidi ${Math.round(rawRate)} calls/s`, ratio: mcpRate / rawRate },
      { suite: 'sidecar', name: `presentation events/s (${EVENTS} from one call)`, value: sidecarEvents.perSecond, unit: 'events/s', reference: `raw server stream ${Math.round(rawEvents.perSecond)} events/s`, ratio: sidecarEvents.perSecond / rawEvents.perSecond, note: `sidecar: ${order(sidecarEvents)}; raw: ${order(rawEvents)}` },
    ];
  } finally {
    await mcp.close().catch(() => undefined);
    await Promise.all([sidecar.stop(), raw.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
}
