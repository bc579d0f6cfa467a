// Heap after a forced GC in a sidecar child started with --expose-gc, read through the fault tools'
// `heap_stats`: per block of calls within one turn, and after each of several turns has closed.
import type { ToolSidecarServiceClient } from '../../src/gen/toolruntime/v1/sidecar.js';
import { openTrackedTurn, type TrackedTurn } from './tracked-turn.js';

/** One heap reading. */
export interface HeapSample {
  /** Calls made so far (in the turn, or over all turns). */
  calls: number;
  heapUsed: number;
  rss: number;
}

/** What the memory probe measured. */
export interface MemoryReport {
  /** Within one turn: a sample before the first call and after each block. */
  withinTurn: HeapSample[];
  /** After each turn closed (a fresh turn reads it), the first before any. */
  acrossTurns: HeapSample[];
  /** True when the sidecar ran with --expose-gc (else the figures are not after a forced GC). */
  forcedGc: boolean;
  /** Results lost or doubled on the way (the probe's calls count too). */
  lost: number;
  doubled: number;
}

const IN_FLIGHT = 64;

async function heapOf(turn: TrackedTurn, callId: string): Promise<{ heapUsed: number; rss: number; gc: boolean }> {
  const result = turn.result(callId, 60_000);
  turn.send({ callId, name: 'heap_stats', argumentsJson: '{}' });
  const got = await result;
  if (!got?.detailsJson) throw new Error(`heap_stats gave no result (${got?.error?.message ?? 'none'})`);
  return JSON.parse(got.detailsJson) as { heapUsed: number; rss: number; gc: boolean };
}

async function noopCalls(turn: TrackedTurn, prefix: string, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    await turn.pendingBelow(IN_FLIGHT);
    turn.send({ callId: `${prefix}${index}`, name: 'noop', argumentsJson: '{}' });
  }
  await turn.pendingBelow(1);
}

async function heapBetweenTurns(client: ToolSidecarServiceClient): Promise<{ heapUsed: number; rss: number; gc: boolean }> {
  const turn = await openTrackedTurn(client, 'fault-memory-probe');
  const heap = await heapOf(turn, 'probe');
  await turn.end(30_000);
  return heap;
}

/**
 * Runs `callsPerTurn` noop calls on one turn, reading the heap after a forced GC every `block`
 * calls, then `turns` turns of `callsPerAcrossTurn` calls each, reading it after each closed.
 */
export async function runMemoryProbe(options: {
  client: ToolSidecarServiceClient;
  callsPerTurn: number;
  block: number;
  turns: number;
  callsPerAcrossTurn: number;
}): Promise<MemoryReport> {
  const { client } = options;
  const report: MemoryReport = { withinTurn: [], acrossTurns: [], forcedGc: true, lost: 0, doubled: 0 };
  const turn = await openTrackedTurn(client, 'fault-memory');
  let probes = 0;
  const sample = async (target: HeapSample[], probeTurn: TrackedTurn, calls: number) => {
    const heap = await heapOf(probeTurn, `heap${probes++}`);
    report.forcedGc &&= heap.gc;
    target.push({ calls, heapUsed: heap.heapUsed, rss: heap.rss });
  };
  await sample(report.withinTurn, turn, 0);
  for (let done = 0; done < options.callsPerTurn; done += options.block) {
    await noopCalls(turn, `w${done}-`, options.block);
    await sample(report.withinTurn, turn, done + options.block);
  }
  const within = await turn.end(60_000);
  report.lost += within.lost;
  report.doubled += within.doubled;
  const first = await heapBetweenTurns(client);
  report.acrossTurns.push({ calls: 0, heapUsed: first.heapUsed, rss: first.rss });
  for (let index = 0; index < options.turns; index++) {
    const each = await openTrackedTurn(client, 'fault-memory-turns');
    await noopCalls(each, `t${index}-`, options.callsPerAcrossTurn);
    const tally = await each.end(60_000);
    report.lost += tally.lost;
    report.doubled += tally.doubled;
    const heap = await heapBetweenTurns(client);
    report.forcedGc &&= heap.gc;
    report.acrossTurns.push({ calls: (index + 1) * options.callsPerAcrossTurn, heapUsed: heap.heapUsed, rss: heap.rss });
  }
  return report;
}

/** Heap growth per call between the first and last sample, in bytes (least squares over all samples). */
export function bytesPerCall(samples: HeapSample[]): number {
  if (samples.length < 2) return 0;
  const n = samples.length;
  const meanX = samples.reduce((sum, s) => sum + s.calls, 0) / n;
  const meanY = samples.reduce((sum, s) => sum + s.heapUsed, 0) / n;
  let numerator = 0;
  let denominator = 0;
  for (const s of samples) {
    numerator += (s.calls - meanX) * (s.heapUsed - meanY);
    denominator += (s.calls - meanX) ** 2;
  }
  return denominator === 0 ? 0 : numerator / denominator;
}
