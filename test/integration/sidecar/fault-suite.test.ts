import { describe, expect, it } from 'vitest';
import { bytesPerCall } from '../../../bench/faults/memory-probe.js';
import { runFaultSuite, SHORT_SCALE } from '../../../bench/faults/run-fault-suite.js';

// The fault suite's short form (`npm run bench -- faults` runs the full one): mixed bad calls,
// fuzzed arguments, garbage frames, a client and a sidecar killed mid-command, the path-escape and
// token corpora, and the heap after forced GCs. Every "held" counter must be 0.
describe('fault suite (short form)', () => {
  it('loses no result, leaves no stream without a status and no process behind, lets nothing escape', async () => {
    const report = await runFaultSuite({ scale: SHORT_SCALE });
    expect(report.held).toEqual({
      resultsLost: 0,
      resultsDoubled: 0,
      eventsAfterResult: 0,
      streamsWithoutStatus: 0,
      streamsNotOk: 0,
      processesLeftBehind: 0,
      crashes: 0,
      pathEscapes: 0,
      insidePathsRefused: 0,
      badTokensAccepted: 0,
      rightTokenRefused: 0,
    });
    expect(report.tried['mixed calls']).toBe(SHORT_SCALE.mixedCalls);
    expect(report.tried['path-escape attempts']).toBeGreaterThan(100);
    expect(Object.keys(report.mix).length).toBeGreaterThanOrEqual(10);
    // Memory: the heap is read after forced GCs, and a closed turn keeps (about) nothing. The seen
    // call ids of an open turn cost ~50 bytes each; 2 KiB per call across turns would be a leak.
    expect(report.memory.forcedGc).toBe(true);
    expect(report.memory.withinTurn).toHaveLength(SHORT_SCALE.memoryCallsPerTurn / SHORT_SCALE.memoryBlock + 1);
    expect(bytesPerCall(report.memory.acrossTurns)).toBeLessThan(2_048);
  }, 600_000);
});
