import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ToolRuntimeError } from '../../src/errors.js';
import { runningBuilt, runtimePath } from '../../src/runtime-path.js';

/**
 * V8 flags for a built sidecar: none. `--max-semi-space-size=2` was passed here to keep the young
 * generation small, but any heap flag changes V8's flag hash, so Node's built-in code cache is
 * refused and its own modules compile from source: about 18 ms more to the listening line (1.26×
 * the minimal grpc-js server against 1.0× without). Without it a sidecar holds 80 MiB after 50,000
 * calls instead of 70 (the young generation is bounded at 32 MiB either way), and less when idle.
 * Kept as a list so that a deployment's flags have one place to go.
 */
export const SIDECAR_NODE_FLAGS: string[] = [];

/**
 * How to start the sidecar: from the build, plain `node dist/sidecar/main.js` (the same Node as
 * this process, no npm, no tsx); from the sources (development, tests), through tsx.
 */
export function sidecarCommand(built = runningBuilt): { command: string; args: string[] } {
  return built
    ? { command: process.execPath, args: [...SIDECAR_NODE_FLAGS, runtimePath('sidecar/main.js')] }
    : { command: runtimePath('node_modules/.bin/tsx'), args: [runtimePath('sidecar/main.ts')] };
}

/**
 * The arguments that hide `paths` (the controller's data folder, its token files) from every process
 * a spawned sidecar starts for the model and from its file tools (the sidecar's sandbox masks
 * them): `--hide PATH` each, duplicates and empty entries dropped. A path that does not exist yet
 * is still passed: the sandbox resolves hidden paths at each command.
 */
export function sidecarHideArgs(paths: readonly string[]): string[] {
  return [...new Set(paths.filter((path) => path !== ''))].flatMap((path) => ['--hide', path]);
}

/** The sidecar's `{"event":"sandbox",...}` line: what its commands run under (sidecar/sandbox-report.ts). */
export interface SidecarSandboxEvent {
  mode: string;
  network: string;
  /** False: the sandbox cannot be had, and the sidecar's process tools refuse every call. */
  ok: boolean;
  cause?: string;
  fix?: string;
  warning?: string;
}

/** One line for a person: what the sidecar's commands run under, or why they cannot run and the fix. */
export function describeSidecarSandbox(event: SidecarSandboxEvent): string {
  if (!event.ok) return `sandbox unavailable: commands will be refused (${event.cause}). Fix: ${event.fix}`;
  if (event.mode === 'off') return `sandbox off: ${event.warning ?? 'commands run unconfined'}`;
  return `commands run sandboxed (${event.mode}, network ${event.network})`;
}

/** A sidecar child process that is listening. */
export interface SpawnedSidecar {
  /**
   * Its sandbox line, which follows the listening line once the sidecar has probed bubblewrap;
   * `undefined` when the sidecar exits without one.
   */
  sandbox: Promise<SidecarSandboxEvent | undefined>;
  /** `127.0.0.1:PORT`, as the sidecar printed it. */
  address: string;
  /** The bearer token the sidecar requires on every RPC (generated for this child; only the spawner holds it). */
  token: string;
  child: ChildProcess;
  /** What the child wrote on stderr (its logs), the last 64 KiB. */
  stderr(): string;
  /** SIGTERM to the sidecar's process group, SIGKILL after `graceMs` (default 5 s); resolves when it has exited. */
  stop(options?: { graceMs?: number }): Promise<void>;
}

/**
 * Starts the sidecar (`sidecarCommand()`) with `--listen 127.0.0.1:0 --workspace <workspace>
 * --exit-on-stdin-eof --token-file F ...extraArgs ...sidecarHideArgs(hide)` and waits for its
 * `{"event":"listening","address":...}` line.
 *
 * The sidecar gets a token of its own, generated here: a process on the machine (another agent's
 * command among them) cannot open a Turn on it and run commands as this agent. The token reaches
 * it in a file of a private temporary folder (0700, the sidecar's user's) that is deleted once the
 * sidecar has read it and listens, so the model's commands find no file to read.
 *
 * The child's stdin is a pipe whose write end only this process holds (opened close-on-exec, so
 * no other child inherits it) and never writes: when this process ends, however it ends (SIGKILL
 * included, where no handler of ours runs), the sidecar reads EOF and drains and exits as on
 * SIGTERM, and its commands die with it.
 *
 * @throws ToolRuntimeError `sidecar_unavailable` when the child exits first or does not listen
 *   within `timeoutMs` (default 30 s); `aborted` when `signal` aborts (the child is killed).
 */
export async function spawnSidecar(options: {
  workspace: string;
  extraArgs?: string[];
  /** Paths the model's processes must not see: the controller's data folder and token files. */
  hide?: readonly string[];
  /**
   * Starts the sidecar as this user: the model's commands then run as that user and cannot read
   * what only this process's user can (the data folder, token files), sandbox or not. Needs root
   * (or CAP_SETUID/CAP_SETGID), and a workspace and `--state-dir` that user can write.
   */
  user?: { uid: number; gid: number };
  signal?: AbortSignal;
  timeoutMs?: number;
}): Promise<SpawnedSidecar> {
  const { command, args } = sidecarCommand();
  const token = randomBytes(32).toString('base64url');
  const tokenDir = mkdtempSync(join(tmpdir(), 'sidecar-token-'));
  const tokenFile = join(tokenDir, 'token');
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  if (options.user) {
    chownSync(tokenDir, options.user.uid, options.user.gid);
    chownSync(tokenFile, options.user.uid, options.user.gid);
  }
  const removeTokenFile = () => rmSync(tokenDir, { recursive: true, force: true });
  const child = spawn(
    command,
    [...args, '--listen', '127.0.0.1:0', '--workspace', options.workspace, '--exit-on-stdin-eof', '--token-file', tokenFile, ...(options.extraArgs ?? []), ...sidecarHideArgs(options.hide ?? [])],
    // Its own process group: tsx runs the sidecar in a child node process, and signalling the
    // group reaches both (a SIGKILL to tsx alone would orphan the sidecar); tsx passes its stdin,
    // the lifeline, on to that child. The working directory is this process's, so a relative
    // --workspace means the same folder to both.
    { stdio: ['pipe', 'pipe', 'pipe'], detached: true, ...(options.user ? { uid: options.user.uid, gid: options.user.gid } : {}) },
  );
  // The lifeline is never written; an error on it only means the sidecar is gone.
  child.stdin!.on('error', () => {});
  const signalGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // the group is gone already
    }
  };
  // Never leave the sidecar behind, even when this process exits without stopping it.
  const onExit = () => signalGroup('SIGKILL');
  process.once('exit', onExit);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-65_536);
  });
  const exited = once(child, 'exit').then(() => undefined);
  let reportSandbox: (event: SidecarSandboxEvent | undefined) => void = () => {};
  const sandbox = new Promise<SidecarSandboxEvent | undefined>((resolve) => (reportSandbox = resolve));
  void exited.then(() => reportSandbox(undefined));
  const timeoutMs = options.timeoutMs ?? 30_000;
  try {
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new ToolRuntimeError('sidecar_unavailable', `the sidecar did not listen within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onAbort = () => reject(new ToolRuntimeError('aborted', 'starting the sidecar was aborted'));
      if (options.signal?.aborted) onAbort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      createInterface({ input: child.stdout! }).on('line', (line) => {
        try {
          const event = JSON.parse(line) as { event?: string; address?: string };
          if (event.event === 'sandbox') reportSandbox(event as unknown as SidecarSandboxEvent);
          if (event.event === 'listening' && typeof event.address === 'string') {
            clearTimeout(timer);
            options.signal?.removeEventListener('abort', onAbort);
            resolve(event.address);
          }
        } catch {
          // not a JSON line
        }
      });
      const asUser = options.user ? ` as uid ${options.user.uid} (that needs root, or CAP_SETUID and CAP_SETGID)` : '';
      child.once('error', (error) => reject(new ToolRuntimeError('sidecar_unavailable', `could not start the sidecar${asUser}: ${error.message}`)));
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        const lastLine = stderr.trim().split('\n').pop() ?? '';
        reject(new ToolRuntimeError('sidecar_unavailable', `the sidecar exited (${code ?? signal}) before listening: ${lastLine}`));
      });
    });
    const stop = async ({ graceMs = 5_000 } = {}) => {
      if (child.exitCode === null && child.signalCode === null) {
        signalGroup('SIGTERM');
        const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      signalGroup('SIGKILL');
      process.off('exit', onExit);
    };
    removeTokenFile();
    return { address, token, child, sandbox, stderr: () => stderr, stop };
  } catch (error) {
    removeTokenFile();
    signalGroup('SIGKILL');
    await exited;
    process.off('exit', onExit);
    throw error;
  }
}
