// The sandbox's cost. run_command("true") over real gRPC through a sidecar with its default
// sandbox (workspace-write, network off) beside one with --sandbox off, in the same run; then, in
// process, what each part of the bwrap set-up adds (a bare bwrap, the PID namespace and its /proc,
// the network namespace, the full argv the sidecar builds, network allow with its socat bridge); and
// an allowed HTTP GET through the sidecar's proxy beside the same GET direct. Skipped, with a row
// saying so, where bubblewrap does not work.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runProcess } from '../../sidecar/categories/computer/run-process.js';
import { findGitMetadata } from '../../sidecar/categories/computer/sandbox/git-metadata.js';
import { startNetworkProxy } from '../../sidecar/categories/computer/sandbox/network-proxy.js';
import { defaultLimitSettings } from '../../sidecar/categories/computer/sandbox/limits/limit-settings.js';
import { processLimiterFor } from '../../sidecar/categories/computer/sandbox/limits/process-limiter.js';
import { SECCOMP_FD, seccompFilterFile, seccompLauncher } from '../../sidecar/categories/computer/sandbox/seccomp-filter.js';
import type { SandboxPolicy } from '../../sidecar/categories/computer/sandbox/sandbox-policy.js';
import { startSidecar } from '../../test/fixtures/start-sidecar.js';
import { bwrapWorks } from '../../test/fixtures/test-sandbox.js';
import { createClient, openTurn } from '../../test/integration/sidecar/turn-driver.js';
import { quantile, type BenchRow } from '../bench-row.js';

const RUNS = Number(process.env.BENCH_SANDBOX_RUNS ?? 60);
const GETS = 300;

const exec = (file: string, args: string[]) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(file, args, { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${file} exited ${code}`))));
  });

/**
 * p50 of each variant, measured in rounds (one run of each per round, in turn), so the shared
 * machine's load at any moment weighs on every variant alike.
 */
async function interleavedP50(runs: number, variants: Array<() => Promise<unknown>>): Promise<number[]> {
  for (let i = 0; i < 3; i++) for (const once of variants) await once();
  const times = variants.map(() => [] as number[]);
  for (let round = 0; round < runs; round++) {
    for (const [index, once] of variants.entries()) {
      const started = performance.now();
      await once();
      times[index]!.push(performance.now() - started);
    }
  }
  return times.map((list) => quantile(list, 0.5));
}

/** run_command("true") p50 over real sidecars' Turn streams, one per flag set, interleaved. */
async function runCommandP50s(argSets: string[][], workspace: string): Promise<number[]> {
  const sidecars = await Promise.all(argSets.map((args, index) => startSidecar({ args: ['--workspace', workspace, '--state-dir', path.join(workspace, `.state-${index}`), '--log-level', 'error', ...args] })));
  try {
    const turns = await Promise.all(sidecars.map((sidecar) => openTurn(createClient(sidecar.address), 'bench-sandbox')));
    let id = 0;
    const values = await interleavedP50(
      RUNS,
      turns.map((turn) => async () => {
        const result = await turn.call(`c${++id}`, 'run_command', { command: 'true' });
        if (result.error) throw new Error(result.error.message);
      }),
    );
    await Promise.all(turns.map((turn) => turn.end()));
    return values;
  } finally {
    await Promise.all(sidecars.map((sidecar) => sidecar.stop()));
  }
}

/** GET http://127.0.0.1:port/ direct, or through the proxy's Unix socket (absolute-form request). */
function get(port: number, socketPath?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const options = socketPath ? { socketPath, path: `http://127.0.0.1:${port}/`, headers: { host: `127.0.0.1:${port}` } } : { host: '127.0.0.1', port, path: '/' };
    const req = request(options, (response) => {
      response.resume();
      response.once('end', () => (response.statusCode === 200 ? resolve() : reject(new Error(`status ${response.statusCode}`))));
    });
    req.once('error', reject);
    req.end();
  });
}

export async function run(): Promise<BenchRow[]> {
  if (!bwrapWorks()) return [{ suite: 'sandbox', name: 'skipped: bubblewrap does not work here (apt-get install bubblewrap)', value: Number.NaN, unit: '' }];
  const workspace = mkdtempSync(path.join(tmpdir(), 'bench-sandbox-'));
  const rows: BenchRow[] = [];
  let server: Server | undefined;
  try {
    const [off, sandboxed] = (await runCommandP50s([['--sandbox', 'off'], ['--sandbox', 'workspace-write']], workspace)) as [number, number];
    rows.push({ suite: 'sandbox', name: 'run_command("true") over gRPC, --sandbox off', value: off, unit: 'ms p50' });
    rows.push({
      suite: 'sandbox',
      name: 'run_command("true") over gRPC, workspace-write + network off',
      value: sandboxed,
      unit: 'ms p50',
      reference: '--sandbox off',
      ratio: sandboxed / off,
      note: `adds ${(sandboxed - off).toFixed(1)} ms (goal ≤ 15)`,
    });

    // The parts, in process: the same runProcess the tool uses, or bwrap with part of the argv.
    const base = ['--ro-bind', '/', '/', '--dev', '/dev', '--unshare-user', '--disable-userns', '--cap-drop', 'ALL', '--die-with-parent', '--new-session'];
    const parts: Array<[string, () => Promise<unknown>]> = [
      ['/bin/sh -c true, no bwrap', () => exec('/bin/sh', ['-c', 'true'])],
      ['bwrap: ro /, /dev, user ns, caps dropped', () => exec('bwrap', [...base, '/bin/sh', '-c', 'true'])],
      ['  + PID ns and its /proc', () => exec('bwrap', [...base, '--unshare-pid', '--proc', '/proc', '/bin/sh', '-c', 'true'])],
      ['  + network ns', () => exec('bwrap', [...base, '--unshare-pid', '--proc', '/proc', '--unshare-net', '/bin/sh', '-c', 'true'])],
      ['  + IPC, UTS, cgroup ns, private /tmp', () => exec('bwrap', [...base, '--unshare-pid', '--proc', '/proc', '--unshare-net', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--tmpfs', '/tmp', '/bin/sh', '-c', 'true'])],
    ];
    const filter = seccompFilterFile({ denyUnixSockets: false });
    if (filter) {
      const full = [...base, '--unshare-pid', '--proc', '/proc', '--unshare-net', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--tmpfs', '/tmp', '--seccomp', String(SECCOMP_FD), '/bin/sh', '-c', 'true'];
      const launcher = seccompLauncher(filter, 'bwrap', full);
      parts.push(['  + seccomp filter, opened by the sh launcher', () => exec(launcher.file, launcher.args)]);
    }
    const policy = (network: SandboxPolicy['network']): SandboxPolicy => ({ mode: 'workspace-write', network, workspace, hide: [path.join(workspace, '.state')], readable: [] });
    for (const [name, network] of [
      ['runProcess("true"), the sidecar\'s full argv, network off', { mode: 'off' }],
      ['runProcess("true"), the sidecar\'s full argv, network on', { mode: 'on' }],
      ['runProcess("true"), network allow (socat bridge started)', { mode: 'allow', hosts: ['127.0.0.1'] }],
    ] as Array<[string, SandboxPolicy['network']]>) {
      parts.push([name, () => runProcess({ command: 'true', cwd: workspace, env: { PATH: process.env.PATH }, policy: policy(network), signal: new AbortController().signal })]);
    }
    const values = await interleavedP50(RUNS, parts.map(([, once]) => once));
    const measured = new Map<string, number>(parts.map(([name], index) => [name, values[index]!]));
    const reference = measured.get('/bin/sh -c true, no bwrap')!;
    for (const [name, value] of measured) {
      rows.push({ suite: 'sandbox', name: name.startsWith('runProcess') ? name : `exec ${name}`, value, unit: 'ms p50', ...(name.startsWith('/bin/sh') ? {} : { reference: 'sh -c true', ratio: value / reference }) });
    }

    // The limits: the same sandboxed runProcess with the agent's cgroup placement and /tmp size
    // (the default --limits) against --limits off, interleaved. Goal: within 5 ms.
    const limitsOn = defaultLimitSettings();
    const mechanism = (await processLimiterFor(limitsOn)).mechanism;
    const limited = (enabled: boolean) => () =>
      runProcess({ command: 'true', cwd: workspace, env: { PATH: process.env.PATH }, policy: { ...policy({ mode: 'off' }), limits: { ...limitsOn, enabled }, agent: 'bench' }, signal: new AbortController().signal });
    const [limitsOff, limitsOnValue] = (await interleavedP50(RUNS, [limited(false), limited(true)])) as [number, number];
    rows.push({ suite: 'sandbox', name: 'runProcess("true") sandboxed, --limits off', value: limitsOff, unit: 'ms p50' });
    rows.push({
      suite: 'sandbox',
      name: `runProcess("true") sandboxed, limits on (${mechanism})`,
      value: limitsOnValue,
      unit: 'ms p50',
      reference: '--limits off',
      ratio: limitsOnValue / limitsOff,
      note: `adds ${(limitsOnValue - limitsOff).toFixed(1)} ms (goal ≤ 5)`,
    });
    // The git metadata scan each workspace-write command starts with, on this checkout (warm: the
    // per-folder cache holds; a folder unchanged since the last scan costs one stat).
    const checkout = process.cwd();
    findGitMetadata(checkout);
    const scans: number[] = [];
    for (let i = 0; i < 200; i++) {
      const started = performance.now();
      findGitMetadata(checkout);
      scans.push(performance.now() - started);
    }
    rows.push({ suite: 'sandbox', name: 'git metadata scan of this checkout (warm)', value: quantile(scans, 0.5), unit: 'ms p50', note: 'per command under workspace-write; node_modules skipped' });

    // An allowed GET through the proxy beside the same GET direct.
    server = createServer((_request, response) => response.end('ok'));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const proxy = await startNetworkProxy({ hosts: [`127.0.0.1:${port}`] });
    try {
      const [direct, proxied] = (await interleavedP50(GETS, [() => get(port), () => get(port, proxy.socketPath)])) as [number, number];
      rows.push({ suite: 'sandbox', name: 'HTTP GET 127.0.0.1, direct', value: direct * 1000, unit: 'µs p50' });
      rows.push({ suite: 'sandbox', name: 'HTTP GET 127.0.0.1 through the allow proxy', value: proxied * 1000, unit: 'µs p50', reference: 'direct', ratio: proxied / direct, note: 'new connection each; socat bridge not included' });
    } finally {
      await proxy.close();
    }
  } finally {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    rmSync(workspace, { recursive: true, force: true });
  }
  return rows;
}
