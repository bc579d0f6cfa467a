// Streams that end badly: garbage frames, a client killed mid-call, a sidecar killed mid-call.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { TurnRequest, type ToolSidecarServiceClient } from '../../src/gen/toolruntime/v1/sidecar.js';
import type { StartedSidecar } from '../../test/fixtures/start-sidecar.js';
import { createRandom, markedCommand, waitUntilGone } from './process-scan.js';
import { openTrackedTurn, openTurnRequest } from './tracked-turn.js';
import { findLocalServerToken } from '../../src/local-servers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** How long a stream may take to end before it counts as one without a status. */
const STATUS_BOUND_MS = 15_000;

/** What the garbage-frame streams ended with. */
export interface GarbageFrameReport {
  streams: number;
  /** Streams that never got a status (the client's own deadline ended them). */
  withoutStatus: number;
  /** Status codes seen, by name. */
  codes: Record<string, number>;
}

function garbageFrame(random: ReturnType<typeof createRandom>, valid: Buffer): Buffer {
  switch (random.int(4)) {
    case 0:
      return Buffer.from(Array.from({ length: 1 + random.int(64) }, () => random.int(256)));
    case 1: {
      // A valid call with a few bytes flipped.
      const bytes = Buffer.from(valid);
      for (let flips = 1 + random.int(3); flips > 0; flips--) bytes[random.int(bytes.length)] = random.int(256);
      return bytes;
    }
    case 2:
      return valid.subarray(0, random.int(valid.length));
    default:
      return Buffer.concat([valid, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x7f])]);
  }
}

/**
 * Opens `count` Turn streams on a raw client, each sending (in one tick) open, a valid call and a
 * garbage frame (sometimes the garbage first), then half-closing; counts the streams that got no
 * status within the bound. Up to 8 streams run at once.
 */
export async function runGarbageFrames(options: { address: string; count: number; seed: number }): Promise<GarbageFrameReport> {
  const random = createRandom(options.seed);
  const token = findLocalServerToken(options.address, { kind: 'sidecar' });
  const client = new grpc.Client(options.address, grpc.credentials.createInsecure(), {
    interceptors: token ? [(callOptions, nextCall) => new grpc.InterceptingCall(nextCall(callOptions), { start: (metadata, listener, next) => next((metadata.set('authorization', `Bearer ${token}`), metadata), listener) })] : [],
  });
  const open = Buffer.from(TurnRequest.encode(openTurnRequest('fault-frames')).finish());
  const report: GarbageFrameReport = { streams: 0, withoutStatus: 0, codes: {} };
  const one = async (index: number) => {
    const valid = Buffer.from(TurnRequest.encode({ request: { $case: 'call', value: { callId: `g${index}`, name: 'noop', namespace: '', argumentsJson: '{}', deadlineMs: 0, traceparent: '', tracestate: '' } } }).finish());
    const frames = random.next() < 0.1 ? [garbageFrame(random, valid)] : [open, valid, garbageFrame(random, valid)];
    const call = client.makeBidiStreamRequest('/toolruntime.v1.ToolSidecarService/Turn', (value: Buffer) => value, (bytes: Buffer) => bytes, new grpc.Metadata(), {
      deadline: new Date(Date.now() + STATUS_BOUND_MS),
    });
    call.on('data', () => {});
    call.on('error', () => {});
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    for (const frame of frames) call.write(frame);
    call.end();
    const ended = await status;
    report.streams++;
    // DEADLINE_EXCEEDED here is the client's own deadline: the sidecar sent no status.
    if (ended.code === grpc.status.DEADLINE_EXCEEDED) report.withoutStatus++;
    const name = grpc.status[ended.code] ?? String(ended.code);
    report.codes[name] = (report.codes[name] ?? 0) + 1;
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < options.count) await one(next++);
    }),
  );
  client.close();
  return report;
}

/**
 * Starts a client process that runs a long command group, SIGKILLs the client, and counts the
 * command's processes still alive after the bound.
 */
export async function runClientKill(options: { address: string; marker: string }): Promise<{ leftBehind: number }> {
  const child = spawn(`${root}node_modules/.bin/tsx`, [`${root}bench/faults/vanishing-client.ts`, options.address, options.marker], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  const exited = once(child, 'exit');
  const started = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 30_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'started') {
        clearTimeout(timer);
        resolve(true);
      }
    });
  });
  process.kill(-child.pid!, 'SIGKILL');
  await exited;
  if (!started) throw new Error('the vanishing client did not start its command');
  return { leftBehind: (await waitUntilGone(options.marker, STATUS_BOUND_MS)).length };
}

/**
 * Runs a long command group on `sidecar`, SIGKILLs the sidecar, and reports whether the client's
 * stream got a status and how many of the command's processes are still alive after the bound.
 */
export async function runSidecarKill(options: { sidecar: StartedSidecar; client: ToolSidecarServiceClient; marker: string }): Promise<{ withoutStatus: number; leftBehind: number; code?: number }> {
  const turn = await openTrackedTurn(options.client, 'fault-sidecar-kill');
  turn.send({ callId: 'long', name: 'run_command', argumentsJson: JSON.stringify({ command: markedCommand(options.marker, "echo ready; sh -c 'sleep 300 & sleep 300; wait'"), timeout_ms: 600_000 }) });
  const until = Date.now() + 30_000;
  while (Date.now() < until && !turn.events('long').some((event) => event?.$case === 'presentation')) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await options.sidecar.stop('SIGKILL');
  const tally = await turn.end(STATUS_BOUND_MS);
  return { withoutStatus: tally.status ? 0 : 1, code: tally.status?.code, leftBehind: (await waitUntilGone(options.marker, STATUS_BOUND_MS)).length };
}
