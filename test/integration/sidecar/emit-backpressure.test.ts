import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult, ToolSidecarServiceClient } from '../../../src/gen/toolruntime/v1/sidecar.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { createClient, openTurn, textOf, type TurnDriver } from './turn-driver.js';

// A sidecar with a small cap on unsent presentation events, driven by a client that stops
// reading for a while: a tool that awaits emit() must finish with every event, one that ignores
// it must be stopped with tool_failed instead of growing the sidecar's memory.
const CAP = 300;
let sidecar: StartedSidecar;
let client: ToolSidecarServiceClient;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sidecar-emit-'));
  sidecar = await startSidecar({
    entry: 'test/fixtures/fixture-sidecar.ts',
    args: ['--workspace', dir, '--state-dir', join(dir, 'state'), '--max-queued-events', String(CAP), '--log-level', 'warn'],
  });
  client = createClient(sidecar.address);
});

afterAll(async () => {
  client?.close();
  const code = await sidecar?.stop();
  expect(code).toBe(0);
  rmSync(dir, { recursive: true, force: true });
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls a tool while the client reads nothing for `stalledMs`, then reads in short bursts. */
async function callReadingSlowly(turn: TurnDriver, callId: string, name: string, args: unknown, stalledMs = 400): Promise<ToolResult> {
  turn.stream.pause();
  const result = turn.call(callId, name, args);
  await pause(stalledMs);
  let stalls = 0;
  const slow = () => {
    // Every 500 events, stop reading for a moment again.
    if (turn.record(callId).events.length % 500 === 0 && stalls++ < 20) {
      turn.stream.pause();
      setTimeout(() => turn.stream.resume(), 10);
    }
  };
  turn.stream.on('data', slow);
  turn.stream.resume();
  try {
    return await result;
  } finally {
    turn.stream.off('data', slow);
  }
}

function ticks(turn: TurnDriver, callId: string): number[] {
  return turn
    .record(callId)
    .events.filter((event) => event?.$case === 'presentation' && event.value.kind === 'fixture.tick')
    .map((event) => (event?.$case === 'presentation' ? (JSON.parse(event.value.payloadJson) as { index: number }).index : -1));
}

describe('presentation events against a slow reader', () => {
  it('lets a tool that awaits emit() send far more events than the cap, all in order', async () => {
    const turn = await openTurn(client, 'agent-paced');
    const count = CAP * 20;
    const result = await callReadingSlowly(turn, 'p1', 'emit_paced', { count });
    expect(result.error).toBeUndefined();
    expect(textOf(result)).toBe(`emitted ${count}`);
    expect(ticks(turn, 'p1')).toEqual(Array.from({ length: count }, (_, index) => index));
    await turn.end();
  });

  it('stops a tool that ignores emit() while the client is not reading, with tool_failed saying why', async () => {
    const turn = await openTurn(client, 'agent-unpaced');
    // Yields between batches of 100, so it only outruns a client that does not read.
    // A stall long enough for the cap to be passed even on a busy machine (a few ms of emitting).
    const result = await callReadingSlowly(turn, 'u1', 'emit_batches', { count: 200_000, batch: 100 }, 1_000);
    expect(result.error?.code).toBe('tool_failed');
    expect(result.error?.message).toContain('faster than the client reads');
    expect(textOf(result)).toContain(`more than ${CAP} waiting to be sent`);
    const sent = ticks(turn, 'u1');
    expect(sent.length).toBeLessThan(200_000);
    // What was sent before the stop is whole and in order: nothing was silently dropped in between.
    expect(sent).toEqual(Array.from({ length: sent.length }, (_, index) => index));
    // The stream still serves calls.
    const after = await turn.call('n1', 'noop', {});
    expect(after.error).toBeUndefined();
    await turn.end();
  });

  it('stops a tool that emits past the cap in one synchronous burst, even with a client reading', async () => {
    const turn = await openTurn(client, 'agent-burst');
    const result = await turn.call('b1', 'emit', { count: CAP * 4 });
    expect(result.error?.code).toBe('tool_failed');
    expect(ticks(turn, 'b1')).toHaveLength(CAP + 1);
    await turn.end();
  });
});
