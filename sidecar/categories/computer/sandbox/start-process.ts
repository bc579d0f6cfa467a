import { execFile, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { buildSandboxArgv, type CommandSpec, type ExecSpec } from './bwrap-argv.js';
import { defaultLimitSettings, type LimitSettings } from './limits/limit-settings.js';
import { processLimiterFor, type LimitedLaunch } from './limits/process-limiter.js';
import { networkProxyFor } from './network-proxy.js';
import { sharedProcessGroupReaper, type ProcessGroupReaper } from './process-group-reaper.js';
import { killMarked, PROCESS_MARK_ENV, signalGroup, signalSandboxedCommand } from './process-signals.js';
import type { SandboxPolicy } from './sandbox-policy.js';
import { sandboxProbe, sandboxUnavailableError } from './sandbox-probe.js';

/**
 * The policy one process runs under: the sandbox's, the limits of its agent (every process of an
 * agent shares one group: memory, processes, CPU), and whose it is. Without `limits`, the defaults
 * apply (defaultLimitSettings); without `agent`, the sidecar's shared group (`sidecar`).
 */
export interface ProcessPolicy extends SandboxPolicy {
  limits?: LimitSettings;
  agent?: string;
}

/** A command ready to exec: the launcher, bubblewrap and the command, and what starting it needs. */
export interface PreparedCommand extends ExecSpec {
  /** Names this process in its environment (its sandbox's too), for the kill of last resort. */
  readonly mark: string;
  readonly sandboxed: boolean;
  /** Its place under the limits (its group and the OOM verdict). */
  readonly launch: LimitedLaunch;
  /** The memory limit in force, for the result of a process the OOM killer took. */
  readonly memoryLimitBytes: number | undefined;
}

const sizeSupport = new Map<string, Promise<boolean>>();

/** Whether this bubblewrap sizes a tmpfs (`--size`, 0.7.0 and later), asked once per executable. */
function bwrapSizesTmpfs(bwrap: string): Promise<boolean> {
  let known = sizeSupport.get(bwrap);
  if (!known) {
    known = new Promise((resolve) => execFile(bwrap, ['--help'], { timeout: 10_000 }, (_error, stdout, stderr) => resolve(/--size\b/.test(`${stdout}${stderr}`))));
    sizeSupport.set(bwrap, known);
  }
  return known;
}

/**
 * What to exec for `spec` under `policy`: the command itself under `off`, bubblewrap in front of it
 * otherwise (see buildSandboxArgv; under `network: allow` the sidecar's proxy starts first), and in
 * front of both the launcher that closes the sidecar's stray descriptors, raises `oom_score_adj` and
 * places the process in its agent's limits group before anything of the command runs
 * (launcherArgv). A PTY library execs the result itself; it then hands the pid to `adoptProcess`.
 *
 * @throws ToolRuntimeError `sandbox_unavailable` when the policy needs the sandbox and this machine
 *   cannot give it (the message names the cause and the fix); nothing may run then. Error when the
 *   agent's limits group cannot be made.
 */
export async function prepareCommand(spec: CommandSpec & { policy: ProcessPolicy; keepFds?: readonly number[] }): Promise<PreparedCommand> {
  const { policy } = spec;
  const limits = policy.limits ?? defaultLimitSettings();
  const mark = randomUUID();
  const env = { ...spec.env, [PROCESS_MARK_ENV]: mark };
  let exec: ExecSpec;
  if (policy.mode === 'off') exec = buildSandboxArgv({ ...spec, env, bwrap: '' });
  else {
    const probe = await sandboxProbe();
    if (!probe.ok) throw sandboxUnavailableError(probe);
    const proxy = policy.network.mode === 'allow' ? await networkProxyFor(policy.network.hosts) : undefined;
    const sized = limits.enabled && (await bwrapSizesTmpfs(probe.bwrap));
    exec = buildSandboxArgv({ ...spec, env, bwrap: probe.bwrap, ...(proxy ? { proxy } : {}), ...(sized ? { tmpBytes: limits.tmpBytes } : {}) });
  }
  const limiter = await processLimiterFor(limits);
  const launch = limiter.launch([exec.file, ...exec.args], policy.agent ?? 'sidecar', { keepFds: spec.keepFds ?? [] });
  const memoryLimitBytes = limiter.mechanism === 'cgroup-v1' || limiter.mechanism === 'cgroup-v2' ? limits.memoryBytes : undefined;
  return { file: launch.argv[0]!, args: launch.argv.slice(1), env: exec.env, cwd: exec.cwd, mark, sandboxed: policy.mode !== 'off', launch, memoryLimitBytes };
}

/** A started process's group, however it was spawned (child_process, or a PTY library). */
export interface ProcessHandle {
  /** The process group (the process's pid); undefined when the spawn failed. */
  readonly pid: number | undefined;
  /** Whether it runs under bubblewrap. */
  readonly sandboxed: boolean;
  /** The memory limit of its agent's group, where one is enforced. */
  readonly memoryLimitBytes: number | undefined;
  /**
   * Signals the whole group. Sandboxed, a signal that ends the outer bwrap ends everything in the
   * sandbox at once (its PID namespace dies with it): there is no grace inside.
   */
  killGroup(signal: NodeJS.Signals): void;
  /**
   * Signals the command's own process group, as a terminal's Ctrl-C would: sandboxed, the group of
   * the command bubblewrap started inside the sandbox (bwrap itself is left alone, so a `trap` or a
   * REPL's KeyboardInterrupt runs and the command goes on); unsandboxed, the whole group.
   */
  interrupt(signal: NodeJS.Signals): void;
  /** After it ended: whether the OOM killer took a process of its agent's group meanwhile. */
  outOfMemory(): boolean;
  /** It ended (the caller saw its exit): forgets the group, and kills what a killed sandbox left. */
  ended(): void;
}

/**
 * Tracks a process started from a `PreparedCommand` (by `startProcess`, or by a PTY library given
 * `pid`): its group is tied to the sidecar's life by the reaper until `ended()`.
 */
export function adoptProcess(prepared: PreparedCommand, pid: number | undefined, reaper: ProcessGroupReaper = sharedProcessGroupReaper()): ProcessHandle {
  let killRequested = false;
  let done = false;
  if (pid !== undefined) reaper.track(pid);
  else prepared.launch.release();
  return {
    pid,
    sandboxed: prepared.sandboxed,
    memoryLimitBytes: prepared.memoryLimitBytes,
    killGroup(signal) {
      if (pid === undefined) return;
      killRequested = true;
      signalGroup(pid, signal);
    },
    interrupt(signal) {
      if (pid === undefined) return;
      if (prepared.sandboxed) signalSandboxedCommand(pid, signal);
      else signalGroup(pid, signal);
    },
    outOfMemory: () => prepared.launch.outOfMemory(),
    ended() {
      if (done || pid === undefined) return;
      done = true;
      reaper.release(pid);
      prepared.launch.release();
      // bwrap sets its sandbox's parent-death signal only after it has cloned it: a kill that lands
      // in between orphans a sandbox nothing would end. Once a killed bwrap is gone, what still
      // carries this process's mark (the sandbox's init, and with it the namespace) is killed. Only
      // on the kill path: a scan of /proc costs a few milliseconds.
      if (prepared.sandboxed && killRequested) killMarked(prepared.mark);
    },
  };
}

/** What startProcess gives: the child and its group's handle. */
export interface StartedProcess extends ProcessHandle {
  child: ChildProcess;
}

/** What startProcess needs. */
export interface StartProcessOptions extends CommandSpec {
  policy: ProcessPolicy;
  /** Default `['ignore', 'pipe', 'pipe']`. */
  stdio?: StdioOptions;
  /** Ties the group to the sidecar's life. Default: the process's shared reaper. */
  reaper?: ProcessGroupReaper;
  /** Descriptors above 2 (in `stdio`) the command keeps; every other one above 2 is closed. */
  keepFds?: readonly number[];
}

/**
 * The one way the sidecar starts a process for the model (commands, sessions, skills' mcporter
 * calls, MCP servers, users' tools): prepares the exec under the policy, spawns it detached (its own
 * process group) and tracks the group with the reaper, which kills it when the sidecar dies however
 * it dies; the group is forgotten once the child has closed.
 *
 * @throws ToolRuntimeError `sandbox_unavailable` (see prepareCommand); a spawn failure is the
 *   child's `error` event, as with `child_process.spawn`.
 */
export async function startProcess(options: StartProcessOptions): Promise<StartedProcess> {
  return startPrepared(await prepareCommand(options), { ...(options.stdio ? { stdio: options.stdio } : {}), ...(options.reaper ? { reaper: options.reaper } : {}) });
}

/**
 * Spawns a prepared command in a process group of its own, tracked until its child closes.
 * Never throws for a command that fails to exec: `pid` is then undefined and `error` fires.
 */
export function startPrepared(prepared: PreparedCommand, options: { stdio?: StdioOptions; reaper?: ProcessGroupReaper } = {}): StartedProcess {
  const child = spawn(prepared.file, prepared.args, { cwd: prepared.cwd, env: prepared.env, detached: true, stdio: options.stdio ?? ['ignore', 'pipe', 'pipe'] });
  const handle = adoptProcess(prepared, child.pid, options.reaper);
  child.once('close', () => handle.ended());
  return { ...handle, child };
}
