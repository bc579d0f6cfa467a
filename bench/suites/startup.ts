// What a sidecar costs to start and keep, as deployed (the build, run by plain node), beside a bare
// Node process and a minimal grpc-js server started in the same run; and `npm start` end to end.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { SIDECAR_NODE_FLAGS } from '../../controller/sidecar-client/spawn-sidecar.js';
import { ToolSidecarServiceClient, TurnKind, type TurnResponse } from '../../src/gen/toolruntime/v1/sidecar.js';
import { quantile, type BenchRow } from '../bench-row.js';
import { measureSidecarLifeline } from './sidecar-lifeline.js';
import { localTokenOptions } from '../../test/integration/sidecar/turn-driver.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const STARTS = 9;
const NPM_STARTS = 5;
const CALLS = 50_000;
const IN_FLIGHT = 64;
const SETTLE_MS = 1_000;
const MiB = 1024 * 1024;

interface Started {
  child: ChildProcess;
  address: string;
  ms: number;
}

/** Starts `node [...nodeFlags] <script> ...args` and resolves at its listening line, with the time it took. */
async function start(script: string, args: string[] = [], nodeFlags: string[] = []): Promise<Started> {
  const began = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, script, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not listen within 30 s`)), 30_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as { event?: string; address?: string };
      if (event.event === 'listening') {
        clearTimeout(timer);
        resolve(event.address ?? '');
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before listening`)));
  });
  return { child, address, ms: performance.now() - began };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Resident set size of a process, from /proc, in MiB. */
function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? (Number(match[1]) * 1024) / MiB : Number.NaN;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
const median = (values: number[]) => quantile(values, 0.5);

/** `CALLS` todo_read calls over one Turn, `IN_FLIGHT` at a time, with the generated client. */
async function manyCalls(address: string): Promise<void> {
  const client = new ToolSidecarServiceClient(address, grpc.credentials.createInsecure(), localTokenOptions(address));
  const turn = client.turn();
  let sent = 0;
  let done = 0;
  await new Promise<void>((resolve, reject) => {
    const send = () => {
      const callId = `c${sent++}`;
      turn.write({ request: { $case: 'call', value: { callId, name: 'todo_read', namespace: '', argumentsJson: '{}', deadlineMs: 0, traceparent: '', tracestate: '' } } });
    };
    turn.on('error', reject);
    turn.on('data', (message: TurnResponse) => {
      if (message.event?.$case === 'toolSet') {
        for (let i = 0; i < IN_FLIGHT; i++) send();
      } else if (message.event?.$case === 'result') {
        if (message.event.value.error) reject(new Error(`call failed: ${message.event.value.error.message}`));
        done++;
        if (done === CALLS) resolve();
        else if (sent < CALLS) send();
      }
    });
    turn.write({
      request: { $case: 'open', value: { context: { agentId: 'bench', turnId: 'startup', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: false, approvalPolicy: undefined, sandbox: undefined } } },
    });
  });
  turn.end();
  client.close();
}

/** Opens a Turn on `address` and resolves when its tool_set arrives (bounded: 30 s). */
async function firstToolSet(address: string): Promise<void> {
  const client = new ToolSidecarServiceClient(address, grpc.credentials.createInsecure(), localTokenOptions(address));
  const turn = client.turn();
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no tool_set within 30 s')), 30_000);
      turn.on('error', reject);
      turn.on('data', (message: TurnResponse) => {
        if (message.event?.$case === 'toolSet') {
          clearTimeout(timer);
          resolve();
        }
      });
      turn.write({
        request: { $case: 'open', value: { context: { agentId: 'bench', turnId: 'first', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: true, approvalPolicy: undefined, sandbox: undefined } } },
      });
    });
  } finally {
    turn.end();
    client.close();
  }
}

/** Wall time of a command that runs to completion, in ms. */
function wallMs(command: string, args: string[]): number {
  const began = performance.now();
  execFileSync(command, args, { cwd: root, stdio: 'ignore', env: { ...process.env, OPENAI_API_KEY: '', OPENAI_BASE_URL: '' }, timeout: 120_000 });
  return performance.now() - began;
}

export async function run(): Promise<BenchRow[]> {
  execFileSync(process.execPath, [join(root, '.ci/build.mjs'), '--if-stale'], { cwd: root, stdio: 'inherit' });
  const scratch = mkdtempSync(join(tmpdir(), 'bench-startup-'));
  const sidecarArgs = ['--workspace', scratch, '--state-dir', join(scratch, 'state'), '--log-level', 'warn'];
  const targets = {
    bare: [join(root, 'bench/fixtures/bare-node.mjs')],
    grpc: [join(root, 'bench/fixtures/minimal-grpc-server.mjs')],
    sidecar: [join(root, 'dist/sidecar/main.js'), ...sidecarArgs],
    // What ran before the build, in one process (tsx's CLI would add a second): the sources through tsx.
    source: [join(root, 'sidecar/main.ts'), ...sidecarArgs],
  } as const;
  const flags = { bare: [], grpc: [], sidecar: SIDECAR_NODE_FLAGS, source: ['--import', 'tsx'] };
  const times = { bare: [] as number[], grpc: [] as number[], sidecar: [] as number[], source: [] as number[] };
  const rss = { bare: [] as number[], grpc: [] as number[], sidecar: [] as number[], source: [] as number[] };
  // The built sidecar again, to its first tool_set: a Turn opened as soon as it listens (the tool
  // categories load after the listening line, so this row keeps that line honest).
  const toolSet: number[] = [];
  try {
    // Interleaved, so the shared machine's load falls on each alike.
    for (let round = 0; round < STARTS; round++) {
      for (const name of ['bare', 'grpc', 'sidecar', 'source'] as const) {
        const [script, ...args] = targets[name];
        const started = await start(script, args, flags[name]);
        times[name].push(started.ms);
        await settle();
        rss[name].push(rssMiB(started.child.pid!));
        await stop(started.child);
      }
      const began = performance.now();
      const started = await start(targets.sidecar[0], targets.sidecar.slice(1), SIDECAR_NODE_FLAGS);
      await firstToolSet(started.address);
      toolSet.push(performance.now() - began);
      await stop(started.child);
    }
    // As the controller starts it (SIDECAR_NODE_FLAGS).
    const sidecar = await start(targets.sidecar[0], targets.sidecar.slice(1), SIDECAR_NODE_FLAGS);
    await settle();
    const beforeCalls = rssMiB(sidecar.child.pid!);
    await manyCalls(sidecar.address);
    await settle();
    const afterCalls = rssMiB(sidecar.child.pid!);
    await stop(sidecar.child);
    const lifelineRows = await measureSidecarLifeline({ script: targets.sidecar[0], sidecarArgs });

    const npmStart: number[] = [];
    const controller: number[] = [];
    const npmAlone: number[] = [];
    const fromSource: number[] = [];
    const bareRun: number[] = [];
    for (let round = 0; round < NPM_STARTS; round++) {
      npmStart.push(wallMs('npm', ['start', '--silent', '--', '--quiet']));
      controller.push(wallMs(process.execPath, [join(root, 'dist/controller/main.js'), '--quiet']));
      npmAlone.push(wallMs('npm', ['--version']));
      fromSource.push(wallMs(join(root, 'node_modules/.bin/tsx'), [join(root, 'controller/main.ts'), '--quiet']));
      bareRun.push(wallMs(process.execPath, ['-e', '']));
    }

    const s = { bare: median(times.bare), grpc: median(times.grpc), sidecar: median(times.sidecar), source: median(times.source) };
    const m = { bare: median(rss.bare), grpc: median(rss.grpc), sidecar: median(rss.sidecar), source: median(rss.source) };
    const suite = 'startup';
    return [
      { suite, name: 'bare node: start to listening line', value: s.bare, unit: 'ms p50', note: `${STARTS} starts, interleaved` },
      { suite, name: 'minimal grpc-js server: start to listening', value: s.grpc, unit: 'ms p50', reference: 'bare node', ratio: s.grpc / s.bare },
      { suite, name: 'built sidecar: start to listening line', value: s.sidecar, unit: 'ms p50', reference: 'minimal grpc-js server', ratio: s.sidecar / s.grpc, note: `goal ≤ 200 ms; ${(s.sidecar - s.bare).toFixed(0)} ms above bare node` },
      { suite, name: 'built sidecar: start to first tool_set', value: median(toolSet), unit: 'ms p50', reference: 'built sidecar: start to listening line', ratio: median(toolSet) / s.sidecar, note: 'a Turn opened at the listening line' },
      { suite, name: 'sidecar from source (node --import tsx)', value: s.source, unit: 'ms p50', reference: 'built sidecar', ratio: s.source / s.sidecar, note: 'the pre-build way, for comparison' },
      { suite, name: 'bare node: idle RSS', value: m.bare, unit: 'MiB p50' },
      { suite, name: 'minimal grpc-js server: idle RSS', value: m.grpc, unit: 'MiB p50', reference: 'bare node', ratio: m.grpc / m.bare },
      { suite, name: 'built sidecar: idle RSS', value: m.sidecar, unit: 'MiB p50', reference: 'minimal grpc-js server', ratio: m.sidecar / m.grpc, note: 'goals ≤ 64 MiB and ≤ 1.15×' },
      { suite, name: 'sidecar from source: idle RSS', value: m.source, unit: 'MiB p50', reference: 'built sidecar', ratio: m.source / m.sidecar, note: 'one process; tsx CLI adds a second' },
      { suite, name: `built sidecar: RSS after ${CALLS.toLocaleString('en-US')} calls`, value: afterCalls, unit: 'MiB', reference: 'the same sidecar idle', ratio: afterCalls / beforeCalls, note: `goal ≤ 120 MiB; todo_read, ${IN_FLIGHT} in flight on one Turn` },
      { suite, name: 'bare node: run to exit', value: median(bareRun), unit: 'ms p50', note: '`node -e ""`' },
      { suite, name: 'npm alone: `npm --version`', value: median(npmAlone), unit: 'ms p50', reference: 'bare node run', ratio: median(npmAlone) / median(bareRun), note: "npm's own start-up, part of every npm start" },
      { suite, name: 'built controller turn: `node dist/controller/main.js`', value: median(controller), unit: 'ms p50', reference: 'bare node run', ratio: median(controller) / median(bareRun), note: 'embedded model, spawned sidecar, one turn' },
      { suite, name: 'the same turn from source: `tsx controller/main.ts`', value: median(fromSource), unit: 'ms p50', reference: 'built controller turn', ratio: median(fromSource) / median(controller), note: 'the pre-build way: tsx, spawning the sidecar through tsx' },
      { suite, name: '`npm start` wall time', value: median(npmStart), unit: 'ms p50', reference: 'bare node run', ratio: median(npmStart) / median(bareRun), note: `goal ≤ 700 ms; ${NPM_STARTS} runs, the staleness check included` },
      ...lifelineRows,
    ];
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
