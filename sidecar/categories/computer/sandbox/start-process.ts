import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { CategoryConfig } from '../../category-config.js';
import type { TurnSandbox } from './sandbox-policy.js';
import { sharedProcessGroupReaper, type ProcessGroupReaper } from '../process-group-reaper.js';
import { buildSandboxArgv, type CommandSpec, type ExecSpec } from './bwrap-argv.js';
import { networkProxyFor } from './network-proxy.js';
import { defaultSandboxSettings, effectivePolicy, type SandboxPolicy, type SandboxSettings } from './sandbox-policy.js';
import { sandboxProbe, sandboxUnavailableError } from './sandbox-probe.js';

/**
 * The sidecar's sandbox settings: `config.sandbox`, or (an embedding program that set none) the
 * default `workspace-write` with the network off and the state folder hidden. The state folder's
 * `mcporter` folder (the wrapper and configuration skills tell the model to run) stays readable.
 */
export function sandboxSettingsOf(config: CategoryConfig): SandboxSettings {
  if (config.sandbox) return config.sandbox;
  return { ...defaultSandboxSettings(), hide: [config.stateDir], readable: [path.join(config.stateDir, 'mcporter')] };
}

/** The policy a turn's processes run under (the operator's settings, tightened by the turn). */
export function policyFor(config: CategoryConfig, turn?: TurnSandbox): SandboxPolicy {
  return effectivePolicy(sandboxSettingsOf(config), config.workspace, turn);
}

/**
 * What to exec for `spec` under `policy`: the command itself under `off`, bubblewrap in front of it
 * otherwise (see buildSandboxArgv); under `network: allow` it starts the sidecar's proxy first.
 * This is the function a PTY library uses: it execs `{ file, args, env, cwd }` itself and must put
 * the result in a process group of its own tracked by `sharedProcessGroupReaper()`.
 *
 * @throws ToolRuntimeError `sandbox_unavailable` when the policy needs the sandbox and this machine
 *   cannot give it (the message names the cause and the fix); nothing may run then.
 */
export async function prepareCommand(spec: CommandSpec & { policy: SandboxPolicy }): Promise<ExecSpec> {
  if (spec.policy.mode === 'off') return buildSandboxArgv({ ...spec, bwrap: '' });
  const probe = await sandboxProbe();
  if (!probe.ok) throw sandboxUnavailableError(probe);
  const proxy = spec.policy.network.mode === 'allow' ? await networkProxyFor(spec.policy.network.hosts) : undefined;
  return buildSandboxArgv({ ...spec, bwrap: probe.bwrap, ...(proxy ? { proxy } : {}) });
}

/** What startProcess gives. */
export interface StartedProcess {
  child: ChildProcess;
  /** The process group (the child's pid); undefined when the spawn failed (`child` emits `error`). */
  pid: number | undefined;
  /** Whether it runs under bubblewrap. */
  sandboxed: boolean;
  /**
   * Signals the whole group. Sandboxed, any signal that ends the outer bwrap ends everything in the
   * sandbox at once (its PID namespace dies with it): there is no grace inside.
   */
  killGroup(signal: NodeJS.Signals): void;
}

/** What startProcess needs. */
export interface StartProcessOptions extends CommandSpec {
  policy: SandboxPolicy;
  /** Default `['ignore', 'pipe', 'pipe']`. */
  stdio?: StdioOptions;
  /** Ties the group to the sidecar's life. Default: the process's shared reaper. */
  reaper?: ProcessGroupReaper;
}

/** Names one started process in its environment (and its sandbox's, bwrap's own included). */
const PROCESS_MARK_ENV = 'TOOLS_RUNTIME_PROCESS';

/** SIGKILLs every live process whose environment carries `mark`; returns how many. */
function killMarked(mark: string): number {
  const needle = Buffer.from(`${PROCESS_MARK_ENV}=${mark}\0`);
  let killed = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`).includes(needle)) continue;
      process.kill(Number(entry), 'SIGKILL');
      killed++;
    } catch {
      // gone, or not ours to read
    }
  }
  return killed;
}

/**
 * The one way the sidecar starts a process for the model (commands, skills' mcporter calls, and
 * whatever starts processes for users' tools): prepares the exec under the policy, spawns it
 * detached (its own process group) and tracks the group with the reaper, which kills it when the
 * sidecar dies however it dies; the reaper forgets the group once the child has closed.
 *
 * @throws ToolRuntimeError `sandbox_unavailable` (see prepareCommand); a spawn failure is the
 *   child's `error` event, as with `child_process.spawn`.
 */
export async function startProcess(options: StartProcessOptions): Promise<StartedProcess> {
  const mark = randomUUID();
  const exec = await prepareCommand({ ...options, env: { ...options.env, [PROCESS_MARK_ENV]: mark } });
  const child = spawnPrepared(exec, options.stdio ?? ['ignore', 'pipe', 'pipe']);
  const pid = child.pid;
  const reaper = options.reaper ?? sharedProcessGroupReaper();
  const sandboxed = options.policy.mode !== 'off';
  let killRequested = false;
  if (pid !== undefined) {
    reaper.track(pid);
    child.once('close', () => reaper.release(pid));
  }
  // bwrap sets its sandbox's parent-death signal only after it has cloned it: a kill that lands in
  // between orphans a sandbox nothing would end. Once a killed bwrap is gone, what still carries
  // this process's mark (the sandbox's init, and with it the namespace) is killed. Only on the
  // kill path: a scan of /proc costs a few milliseconds.
  if (sandboxed) child.once('exit', () => killRequested && killMarked(mark));
  return {
    child,
    pid,
    sandboxed,
    killGroup(signal) {
      if (pid === undefined) return;
      killRequested = true;
      try {
        process.kill(-pid, signal);
      } catch {
        // the group is gone already
      }
    },
  };
}

/**
 * Spawns a command line `prepareCommand` made (bwrap in front when sandboxed) in a process group of
 * its own. The one spawn of a prepared command: `startProcess` uses it, and so does a command
 * session's pipe mode, which prepares once and tracks the group in its own table (a PTY session
 * execs the same line through the PTY library). The caller tracks the group with a reaper.
 * Never throws for a command that fails to exec: `child.pid` is then undefined and `error` fires.
 */
export function spawnPrepared(exec: ExecSpec, stdio: StdioOptions): ChildProcess {
  return spawn(exec.file, exec.args, { cwd: exec.cwd, env: exec.env, detached: true, stdio });
}
