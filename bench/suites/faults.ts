// `npm run bench -- faults`: the fault suite at full scale. Prints what it tried and what held
// (each held figure must be 0), and the heap after a forced GC within one turn and across turns.
import type { BenchRow } from '../bench-row.js';
import { bytesPerCall } from '../faults/memory-probe.js';
import { FULL_SCALE, runFaultSuite } from '../faults/run-fault-suite.js';

const MiB = 1024 * 1024;

export async function run(): Promise<BenchRow[]> {
  const report = await runFaultSuite({ scale: FULL_SCALE, log: (line) => process.stderr.write(`bench: faults: ${line}\n`) });
  const rows: BenchRow[] = [];
  for (const [name, value] of Object.entries(report.tried)) rows.push({ suite: 'faults', name: `tried: ${name}`, value, unit: 'count' });
  rows.push({ suite: 'faults', name: 'tried: mixed-call kinds', value: Object.keys(report.mix).length, unit: 'kinds', note: Object.entries(report.mix).map(([kind, count]) => `${kind} ${count}`).join(', ') });
  rows.push({ suite: 'faults', name: 'garbage-frame statuses', value: report.tried['garbage-frame streams'] ?? 0, unit: 'streams', note: Object.entries(report.frameCodes).map(([code, count]) => `${code} ${count}`).join(', ') });
  for (const [name, value] of Object.entries(report.held)) rows.push({ suite: 'faults', name: `held: ${name}`, value, unit: 'count', note: value === 0 ? 'must be 0: ok' : 'must be 0: FAILED' });
  const { withinTurn, acrossTurns, forcedGc } = report.memory;
  const gcNote = forcedGc ? 'after a forced GC' : 'no --expose-gc: not after a forced GC';
  for (const sample of withinTurn) rows.push({ suite: 'faults', name: `heap within one turn after ${sample.calls.toLocaleString('en-US')} calls`, value: sample.heapUsed / MiB, unit: 'MiB', note: `${gcNote}; rss ${(sample.rss / MiB).toFixed(0)} MiB` });
  rows.push({ suite: 'faults', name: 'heap growth per call within one turn', value: bytesPerCall(withinTurn), unit: 'bytes/call', note: 'least squares over the samples above (the turn keeps its seen call ids)' });
  for (const sample of acrossTurns) rows.push({ suite: 'faults', name: `heap between turns after ${sample.calls.toLocaleString('en-US')} calls`, value: sample.heapUsed / MiB, unit: 'MiB', note: `${gcNote}; rss ${(sample.rss / MiB).toFixed(0)} MiB` });
  rows.push({ suite: 'faults', name: 'heap growth per call across turns', value: bytesPerCall(acrossTurns), unit: 'bytes/call', note: 'should be ~0: a closed turn keeps nothing' });
  return rows;
}
