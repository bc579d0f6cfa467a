// Command sessions (start_command / write_session / read_session) through a real sidecar over
// gRPC, beside references measured in the same run:
// - echo round trip: a write to `cat` in a PTY until the client sees the echo (a command.output
//   event, or the result if it comes first), against the PTY library (@lydell/node-pty) driven
//   directly in this process (write → onData);
// - the turn's call floor (list_sessions round trips), which is most of the echo round trip;
// - sidecar RSS per idle session (PTY and pipes), against the RSS of the session's own processes;
// - a chatty command's output rate through a session (start_command, then read_session until it
//   ends), against run_command streaming the same command.
// - an echo through write_session with the default yield_ms until its result returns (the settle
//   rule: a call returns when the program has answered), against the PTY library's own echo plus
//   the call floor; a Python REPL driven for 20 expressions with the defaults;
// - run_command's start in the agent's shared network namespace (a session keeps it) against one of
//   its own (root and bubblewrap only).
// Sandbox: test-sandbox.ts's choice (startSidecar adds it): the default workspace-write where
// bubblewrap works, off where it does not; each row's note says which.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as NodePty from '@lydell/node-pty';
import { startSidecar, type StartedSidecar } from '../../test/fixtures/start-sidecar.js';
import { testSandboxMode } from '../../test/fixtures/test-sandbox.js';
import { createClient, openTurn, textOf, type TurnDriver } from '../../test/integration/sidecar/turn-driver.js';
import { quantile, type BenchRow } from '../bench-row.js';

const ECHOES = 200;
const IDLE_SESSIONS = 8;
const CHATTY_BYTES = 20_000_000;
const CHATTY = `yes 'a line of chatty build output, 48 bytes long' | head -c ${CHATTY_BYTES}`;

let calls = 0;
const nextId = () => `b${calls++}`;

/** The node process that runs sidecar/main.ts (tsx starts it as a grandchild in the group). */
function sidecarPid(sidecar: StartedSidecar): number {
  const group = sidecar.child.pid!;
  let found = group;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== group) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes('sidecar/main.ts') && !cmdline.includes('tsx/dist/cli')) found = Number(entry);
    } catch {
      // gone
    }
  }
  return found;
}

const residentKiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

async function startSession(turn: TurnDriver, args: Record<string, unknown>): Promise<string> {
  const text = textOf(await turn.call(nextId(), 'start_command', args));
  const id = /session (s\d+) is still running/.exec(text)?.[1];
  if (!id) throw new Error(`no session: ${text}`);
  return id;
}

/** Write `x\n` to a PTY `cat` over gRPC; ms until the echo shows in an event or the result. */
async function grpcEchoes(turn: TurnDriver): Promise<number[]> {
  const id = await startSession(turn, { command: 'stty -echo; cat', tty: true, yield_ms: 300 });
  const samples: number[] = [];
  for (let index = 0; index < ECHOES + 20; index++) {
    const token = `echo${index}`;
    const callId = nextId();
    const started = performance.now();
    let seen: number | undefined;
    const onData = () => {
      if (seen !== undefined) return;
      const events = turn.record(callId).events;
      if (events.some((event) => event?.$case === 'presentation' && event.value.payloadJson.includes(token))) seen = performance.now();
    };
    turn.stream.on('data', onData);
    const result = await turn.call(callId, 'write_session', { session_id: id, input: `${token}\n`, yield_ms: 40 });
    turn.stream.off('data', onData);
    if (seen === undefined && textOf(result).includes(token)) seen = performance.now();
    // A loaded machine may take longer than the write's yield: the echo then comes with a read.
    for (let poll = 0; seen === undefined && poll < 100; poll++) {
      if (textOf(await turn.call(nextId(), 'read_session', { session_id: id, yield_ms: 40 })).includes(token)) seen = performance.now();
    }
    if (seen === undefined) throw new Error(`echo ${token} not seen: ${textOf(result)}`);
    if (index >= 20) samples.push(seen - started);
  }
  await turn.call(nextId(), 'kill_session', { session_id: id });
  return samples;
}

/** The same through the PTY library in this process: write → onData with the echo. */
async function directEchoes(): Promise<number[]> {
  const pty = createRequire(import.meta.url)('@lydell/node-pty') as typeof NodePty;
  const term = pty.spawn('/bin/sh', ['-c', 'stty -echo; cat'], { cols: 120, rows: 40, cwd: tmpdir(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  let buffer = '';
  let waiting: { token: string; resolve: () => void } | undefined;
  term.onData((text) => {
    buffer += text;
    if (waiting && buffer.includes(waiting.token)) waiting.resolve();
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const samples: number[] = [];
  for (let index = 0; index < ECHOES + 20; index++) {
    const token = `echo${index}`;
    buffer = '';
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no echo of ${token}`)), 5_000);
      waiting = {
        token,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      term.write(`${token}\n`);
    });
    if (index >= 20) samples.push(performance.now() - started);
  }
  term.kill('SIGKILL');
  return samples;
}

/** The same turn's floor: list_sessions round trips (no process touched), ms. */
async function callFloor(turn: TurnDriver): Promise<number[]> {
  const samples: number[] = [];
  for (let index = 0; index < ECHOES + 20; index++) {
    const started = performance.now();
    await turn.call(nextId(), 'list_sessions', {});
    if (index >= 20) samples.push(performance.now() - started);
  }
  return samples;
}

/** RSS of the processes `pids` and all their descendants (a sandboxed command's too), KiB. */
function treeResidentKiB(pids: number[]): number {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone
    }
  }
  const inTree = new Set(pids);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, parent] of parents) if (!inTree.has(pid) && inTree.has(parent)) grew = inTree.add(pid) !== undefined;
  }
  let total = 0;
  for (const pid of inTree) {
    try {
      total += residentKiB(pid);
    } catch {
      // gone
    }
  }
  return total;
}

/** Per idle session of one kind: the sidecar's RSS growth and the session's own processes' RSS, KiB. */
async function rssPerSession(turn: TurnDriver, pid: number, tty: boolean): Promise<{ sidecar: number; processes: number }> {
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = residentKiB(pid);
  const ids: string[] = [];
  const groups: number[] = [];
  for (let index = 0; index < IDLE_SESSIONS; index++) {
    const text = textOf(await turn.call(nextId(), 'start_command', { command: 'cat', tty, yield_ms: 50 }));
    const match = /session (s\d+) is still running \([\d.]+ s, pid (\d+)\)/.exec(text);
    if (!match) throw new Error(`no session: ${text}`);
    ids.push(match[1]!);
    groups.push(Number(match[2]));
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
  const after = residentKiB(pid);
  const processes = treeResidentKiB(groups);
  for (const id of ids) await turn.call(nextId(), 'kill_session', { session_id: id });
  return { sidecar: (after - before) / IDLE_SESSIONS, processes: processes / IDLE_SESSIONS };
}

/** MB/s of the chatty command through a session, polled until it ends. */
async function sessionRate(turn: TurnDriver): Promise<number> {
  const started = performance.now();
  let text = textOf(await turn.call(nextId(), 'start_command', { command: CHATTY, yield_ms: 30_000 }));
  const id = /session (s\d+)/.exec(text)?.[1];
  while (id && !text.includes('ended:')) text = textOf(await turn.call(nextId(), 'read_session', { session_id: id, yield_ms: 30_000 }));
  return CHATTY_BYTES / 1e6 / ((performance.now() - started) / 1000);
}

async function runCommandRate(turn: TurnDriver): Promise<number> {
  const started = performance.now();
  const text = textOf(await turn.call(nextId(), 'run_command', { command: CHATTY }));
  if (!text.includes('exit code 0')) throw new Error(text.slice(0, 200));
  return CHATTY_BYTES / 1e6 / ((performance.now() - started) / 1000);
}

/**
 * Write `x\n` to a PTY `cat` with write_session's defaults (no yield_ms) and time the call's
 * result, which holds the answer (the terminal's echo first, then cat's line). Checks the answer.
 */
async function defaultYieldEchoes(turn: TurnDriver): Promise<number[]> {
  const id = await startSession(turn, { command: 'cat', tty: true, yield_ms: 300 });
  const samples: number[] = [];
  for (let index = 0; index < ECHOES + 20; index++) {
    const token = `echo${index}`;
    const started = performance.now();
    const text = textOf(await turn.call(nextId(), 'write_session', { session_id: id, input: `${token}\n` }));
    const elapsed = performance.now() - started;
    if (text.split(token).length < 3) throw new Error(`write_session returned before cat answered ${token}: ${text}`);
    if (index >= 20) samples.push(elapsed);
  }
  await turn.call(nextId(), 'kill_session', { session_id: id });
  return samples;
}

/** The same echo through the PTY library directly: write → cat's line (the second copy), ms. */
async function directAnswers(): Promise<number[]> {
  const pty = createRequire(import.meta.url)('@lydell/node-pty') as typeof NodePty;
  const term = pty.spawn('/bin/cat', [], { cols: 120, rows: 40, cwd: tmpdir(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  let buffer = '';
  let waiting: { token: string; resolve: () => void } | undefined;
  term.onData((text) => {
    buffer += text;
    if (waiting && buffer.split(waiting.token).length >= 3) waiting.resolve();
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const samples: number[] = [];
  for (let index = 0; index < ECHOES + 20; index++) {
    const token = `echo${index}`;
    buffer = '';
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${token}`)), 5_000);
      waiting = {
        token,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      term.write(`${token}\n`);
    });
    if (index >= 20) samples.push(performance.now() - started);
  }
  term.kill('SIGKILL');
  return samples;
}

/** A Python REPL in a terminal, 20 expressions with the defaults: the calls' time in all, ms. */
async function pythonRepl(turn: TurnDriver): Promise<{ totalMs: number; waitedMs: number }> {
  const id = await startSession(turn, { command: 'python3 -q -i', tty: true, until: '>>> ' });
  let totalMs = 0;
  let waitedMs = 0;
  for (let index = 1; index <= 20; index++) {
    const started = performance.now();
    const result = await turn.call(nextId(), 'write_session', { session_id: id, input: `${index} * 1111\n` });
    totalMs += performance.now() - started;
    waitedMs += (JSON.parse(result.detailsJson) as { waitedMs?: number }).waitedMs ?? 0;
    const text = textOf(result);
    if (!text.includes(String(index * 1111)) || !text.includes('>>> ')) throw new Error(`answer ${index} incomplete: ${text}`);
  }
  await turn.call(nextId(), 'kill_session', { session_id: id });
  return { totalMs, waitedMs };
}

/**
 * run_command `true` round trips, ms, interleaved between two agents of the same sidecar: one with a
 * session alive (its commands join the agent's namespace through nsenter), one without (each
 * command gets a namespace of its own, as before). Interleaved so the machine's load moves both alike.
 */
async function commandStarts(joinedTurn: TurnDriver, ownTurn: TurnDriver): Promise<{ own: number[]; joined: number[] }> {
  const id = await startSession(joinedTurn, { command: 'sleep 600', yield_ms: 0 });
  const own: number[] = [];
  const joined: number[] = [];
  for (let index = 0; index < 110; index++) {
    for (const [turn, samples] of [[ownTurn, own], [joinedTurn, joined]] as const) {
      const started = performance.now();
      const text = textOf(await turn.call(nextId(), 'run_command', { command: 'true' }));
      if (!text.startsWith('exit code 0')) throw new Error(text);
      if (index >= 10) samples.push(performance.now() - started);
    }
  }
  await joinedTurn.call(nextId(), 'kill_session', { session_id: id });
  return { own, joined };
}

export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-sessions-'));
  const sidecar = await startSidecar({ args: ['--workspace', dir, '--state-dir', join(dir, '.state'), '--log-level', 'error'], timeoutMs: 60_000 });
  const client = createClient(sidecar.address);
  try {
    const turn = await openTurn(client, 'bench-agent');
    const pid = sidecarPid(sidecar);
    const direct = await directEchoes();
    const overGrpc = await grpcEchoes(turn);
    const floor = await callFloor(turn);
    const answers = await directAnswers();
    const defaultEchoes = await defaultYieldEchoes(turn);
    const repl = await pythonRepl(turn);
    const alone = await openTurn(client, 'bench-agent-alone');
    const starts = await commandStarts(turn, alone);
    await alone.end();
    const pty = await rssPerSession(turn, pid, true);
    const pipe = await rssPerSession(turn, pid, false);
    const rates = { session: [] as number[], run: [] as number[] };
    for (let round = 0; round < 3; round++) {
      rates.session.push(await sessionRate(turn));
      rates.run.push(await runCommandRate(turn));
    }
    await turn.end();
    const sandbox = testSandboxMode();
    const grpcP50 = quantile(overGrpc, 0.5);
    const directP50 = quantile(direct, 0.5);
    const sessionRateP50 = quantile(rates.session, 0.5);
    const runRateP50 = quantile(rates.run, 0.5);
    const floorP50 = quantile(floor, 0.5);
    const answerReference = quantile(answers, 0.5) + floorP50;
    const defaultP50 = quantile(defaultEchoes, 0.5);
    const sharedNetwork = sandbox !== 'off' && process.getuid?.() === 0;
    const joinCost = quantile(starts.joined, 0.5) - quantile(starts.own, 0.5);
    return [
      { suite: 'sessions', name: 'echo through write_session with the default yield_ms, result returned, p50', value: defaultP50, unit: 'ms', reference: `PTY library's answer p50 + call floor p50 = ${answerReference.toFixed(2)} ms`, ratio: defaultP50 / answerReference, note: `target ratio ≤ 2 (before the settle rule: the whole 1,000 ms); p99 ${quantile(defaultEchoes, 0.99).toFixed(2)} ms; PTY cat with echo on, sandbox ${sandbox}` },
      { suite: 'sessions', name: 'Python REPL, 20 expressions with the defaults, calls in all', value: repl.totalMs, unit: 'ms', reference: '20 × the default yield_ms = 20,000 ms before the settle rule', ratio: repl.totalMs / 20_000, note: `target < 1,000 ms; of it the sidecar waited ${repl.waitedMs} ms; every answer checked whole (value and prompt); sandbox ${sandbox}` },
      sharedNetwork
        ? { suite: 'sessions', name: "run_command start in the agent's network namespace, added p50", value: joinCost, unit: 'ms', reference: `its own namespace: run_command true p50 ${quantile(starts.own, 0.5).toFixed(2)} ms`, ratio: quantile(starts.joined, 0.5) / quantile(starts.own, 0.5), note: `target ≤ 3 ms; joined (nsenter, a session alive) p50 ${quantile(starts.joined, 0.5).toFixed(2)} ms, 100 runs each interleaved with the other agent's` }
        : { suite: 'sessions', name: "run_command start in the agent's network namespace, added p50", value: Number.NaN, unit: 'ms', note: `not measured: needs the sandbox and root (sandbox ${sandbox}, uid ${process.getuid?.()})` },
      { suite: 'sessions', name: 'echo round trip, write_session → echo seen over gRPC, p50', value: grpcP50, unit: 'ms', reference: `PTY library in-process p50 ${directP50.toFixed(2)} ms`, ratio: grpcP50 / directP50, note: `p99 ${quantile(overGrpc, 0.99).toFixed(2)} ms vs ${quantile(direct, 0.99).toFixed(2)} ms; sandbox ${sandbox} over gRPC, none in-process` },
      { suite: 'sessions', name: 'list_sessions round trip over gRPC, p50 (the call floor)', value: quantile(floor, 0.5), unit: 'ms', reference: 'echo round trip above', ratio: quantile(floor, 0.5) / grpcP50, note: 'what any call costs on this turn: most of the echo round trip' },
      { suite: 'sessions', name: 'sidecar RSS per idle PTY session', value: pty.sidecar, unit: 'KiB', reference: `its own processes ${Math.round(pty.processes)} KiB`, ratio: pty.sidecar / pty.processes, note: `${IDLE_SESSIONS} sessions of cat, sandbox ${sandbox} (its processes include bwrap there); RSS moves by pages` },
      { suite: 'sessions', name: 'sidecar RSS per idle pipe session', value: pipe.sidecar, unit: 'KiB', reference: `its own processes ${Math.round(pipe.processes)} KiB`, ratio: pipe.sidecar / pipe.processes, note: `${IDLE_SESSIONS} sessions of cat, sandbox ${sandbox} (its processes include bwrap there); RSS moves by pages` },
      { suite: 'sessions', name: 'chatty output through a session (start + read_session)', value: sessionRateP50, unit: 'MB/s', reference: `run_command streaming ${runRateP50.toFixed(1)} MB/s`, ratio: sessionRateP50 / runRateP50, note: `${CHATTY_BYTES / 1e6} MB of yes lines, median of 3, both under sandbox ${sandbox}; higher is better` },
    ];
  } finally {
    client.close();
    await sidecar.stop('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
