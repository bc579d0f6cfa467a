// The fault suite: sidecar children driven through the proto by the suite's own client, with every
// fault the reliability issue names. `npm run bench -- faults` runs the full form; the integration
// test runs the short one. Every "held" counter must be 0.
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSidecar, type StartedSidecar } from '../../test/fixtures/start-sidecar.js';
import { runFuzzedArguments, runMixedCalls, type CallMix } from './call-faults.js';
import { preparePathCorpus, runPathCorpus } from './corpora.js';
import { runTokenCorpus } from './corpora.js';
import { runMemoryProbe, type MemoryReport } from './memory-probe.js';
import { killMarked, waitUntilGone } from './process-scan.js';
import { runClientKill, runGarbageFrames, runSidecarKill } from './stream-faults.js';
import { createFaultClient } from './tracked-turn.js';

/** How much of everything the suite does. */
export interface FaultScale {
  mixedCalls: number;
  fuzzedArguments: number;
  garbageFrames: number;
  memoryCallsPerTurn: number;
  memoryBlock: number;
  memoryTurns: number;
  memoryCallsPerAcrossTurn: number;
}

export const FULL_SCALE: FaultScale = { mixedCalls: 10_000, fuzzedArguments: 10_000, garbageFrames: 2_000, memoryCallsPerTurn: 100_000, memoryBlock: 10_000, memoryTurns: 10, memoryCallsPerAcrossTurn: 10_000 };
export const SHORT_SCALE: FaultScale = { mixedCalls: 1_500, fuzzedArguments: 1_000, garbageFrames: 150, memoryCallsPerTurn: 10_000, memoryBlock: 2_500, memoryTurns: 4, memoryCallsPerAcrossTurn: 2_500 };

/** What held: every one must be 0. */
export interface FaultHeld {
  resultsLost: number;
  resultsDoubled: number;
  eventsAfterResult: number;
  streamsWithoutStatus: number;
  /** Mixed-call streams that ended with another status than OK. */
  streamsNotOk: number;
  processesLeftBehind: number;
  crashes: number;
  pathEscapes: number;
  insidePathsRefused: number;
  badTokensAccepted: number;
  rightTokenRefused: number;
}

export interface FaultSuiteReport {
  tried: Record<string, number>;
  mix: CallMix;
  frameCodes: Record<string, number>;
  held: FaultHeld;
  memory: MemoryReport;
}

const MAX_ARGUMENTS_BYTES = 64 * 1024;

async function sidecarFor(options: { workspace: string; stateDir: string; extra?: string[]; env?: NodeJS.ProcessEnv }): Promise<StartedSidecar> {
  return startSidecar({
    entry: 'test/fixtures/fault-sidecar.ts',
    args: ['--workspace', options.workspace, '--state-dir', options.stateDir, '--log-level', 'error', '--abort-grace-ms', '1000', '--max-arguments-bytes', String(MAX_ARGUMENTS_BYTES), ...(options.extra ?? [])],
    env: options.env,
    timeoutMs: 60_000,
  });
}

/** Runs the fault suite at `scale`; `log` hears each step. Cleans up what it started, whatever happens. */
export async function runFaultSuite(options: { scale: FaultScale; seed?: number; log?: (line: string) => void }): Promise<FaultSuiteReport> {
  const { scale } = options;
  const seed = options.seed ?? 20_261_130;
  const log = options.log ?? (() => {});
  const base = mkdtempSync(join(tmpdir(), 'fault-suite-'));
  const stateBase = mkdtempSync(join(tmpdir(), 'fault-suite-state-'));
  const marker = `fault${process.pid}x${Date.now()}`;
  const secret = `OUTSIDE-SECRET-${marker}`;
  const held: FaultHeld = { resultsLost: 0, resultsDoubled: 0, eventsAfterResult: 0, streamsWithoutStatus: 0, streamsNotOk: 0, processesLeftBehind: 0, crashes: 0, pathEscapes: 0, insidePathsRefused: 0, badTokensAccepted: 0, rightTokenRefused: 0 };
  const tried: Record<string, number> = {};
  const started: StartedSidecar[] = [];
  try {
    const { workspace } = preparePathCorpus({ base, secret });
    const realWorkspace = realpathSync(workspace);
    const main = await sidecarFor({ workspace, stateDir: join(stateBase, 'main') });
    started.push(main);
    const client = createFaultClient(main.address);

    log(`mixed calls: ${scale.mixedCalls} on one turn`);
    const mixed = await runMixedCalls({ client, count: scale.mixedCalls, seed, marker, maxArgumentsBytes: MAX_ARGUMENTS_BYTES });
    for (const tally of [mixed.tally]) {
      held.resultsLost += tally.lost;
      held.resultsDoubled += tally.doubled;
      held.eventsAfterResult += tally.eventsAfterResult;
      if (!tally.status) held.streamsWithoutStatus++;
      else if (tally.status.code !== 0) held.streamsNotOk++;
    }
    tried['mixed calls'] = mixed.tally.sent;

    log(`fuzzed arguments: ${scale.fuzzedArguments}`);
    const fuzz = await runFuzzedArguments({ client, count: scale.fuzzedArguments, seed: seed + 1 });
    held.resultsLost += fuzz.lost;
    held.resultsDoubled += fuzz.doubled;
    held.eventsAfterResult += fuzz.eventsAfterResult;
    if (!fuzz.status) held.streamsWithoutStatus++;
    else if (fuzz.status.code !== 0) held.streamsNotOk++;
    tried['fuzzed argument strings'] = fuzz.sent;

    log(`garbage frames: ${scale.garbageFrames} streams`);
    const frames = await runGarbageFrames({ address: main.address, count: scale.garbageFrames, seed: seed + 2 });
    held.streamsWithoutStatus += frames.withoutStatus;
    tried['garbage-frame streams'] = frames.streams;

    log('client killed mid-command');
    held.processesLeftBehind += (await runClientKill({ address: main.address, marker: `${marker}c` })).leftBehind;
    tried['clients killed'] = 1;

    log('path-escape corpus');
    const paths = await runPathCorpus({ client, base, secret, realWorkspace });
    held.pathEscapes += paths.escapes;
    held.insidePathsRefused += paths.insideRefused;
    tried['path-escape attempts'] = paths.attempts;

    held.processesLeftBehind += (await waitUntilGone(marker, 15_000)).length;
    client.close();
    if (main.child.exitCode !== null || main.child.signalCode !== null) held.crashes++;
    else if ((await main.stop('SIGTERM')) !== 0) held.crashes++;

    log('sidecar killed mid-command');
    const victim = await sidecarFor({ workspace, stateDir: join(stateBase, 'victim') });
    started.push(victim);
    const victimClient = createFaultClient(victim.address);
    const killed = await runSidecarKill({ sidecar: victim, client: victimClient, marker: `${marker}s` });
    victimClient.close();
    held.streamsWithoutStatus += killed.withoutStatus;
    held.processesLeftBehind += killed.leftBehind;
    tried['sidecars killed'] = 1;

    log('token corpus');
    const tokenFile = join(stateBase, 'token');
    const token = `fault-token-${marker}`;
    writeFileSync(tokenFile, `${token}\n`);
    const guarded = await sidecarFor({ workspace, stateDir: join(stateBase, 'guarded'), extra: ['--token-file', tokenFile] });
    started.push(guarded);
    const guardedClient = createFaultClient(guarded.address, { token: null });
    const tokens = await runTokenCorpus({ client: guardedClient, token });
    guardedClient.close();
    held.badTokensAccepted += tokens.acceptedBad;
    if (!tokens.rightAccepted) held.rightTokenRefused++;
    tried['bad tokens'] = tokens.attempts;
    if ((await guarded.stop('SIGTERM')) !== 0) held.crashes++;

    log(`memory: ${scale.memoryCallsPerTurn} calls on one turn, then ${scale.memoryTurns} turns of ${scale.memoryCallsPerAcrossTurn}`);
    const measured = await sidecarFor({ workspace, stateDir: join(stateBase, 'memory'), env: { NODE_OPTIONS: '--expose-gc' } });
    started.push(measured);
    const memoryClient = createFaultClient(measured.address);
    const memory = await runMemoryProbe({ client: memoryClient, callsPerTurn: scale.memoryCallsPerTurn, block: scale.memoryBlock, turns: scale.memoryTurns, callsPerAcrossTurn: scale.memoryCallsPerAcrossTurn });
    memoryClient.close();
    held.resultsLost += memory.lost;
    held.resultsDoubled += memory.doubled;
    if ((await measured.stop('SIGTERM')) !== 0) held.crashes++;
    tried['memory-probe calls'] = scale.memoryCallsPerTurn + scale.memoryTurns * scale.memoryCallsPerAcrossTurn;

    return { tried, mix: mixed.mix, frameCodes: frames.codes, held, memory };
  } finally {
    for (const sidecar of started) await sidecar.stop('SIGKILL').catch(() => undefined);
    killMarked(marker);
    killMarked(`${marker}c`);
    killMarked(`${marker}s`);
    rmSync(base, { recursive: true, force: true });
    rmSync(stateBase, { recursive: true, force: true });
  }
}
