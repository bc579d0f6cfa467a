import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import type { CategoryConfig } from '../category-config.js';
import { policyFor, startProcess } from '../computer/sandbox/index.js';

/** A started stdio MCP server process. */
export interface McpServerProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Whether it runs inside the sandbox (bubblewrap). */
  readonly sandboxed: boolean;
  /** Settles once the process has exited (however). */
  readonly exited: Promise<void>;
  /** Ends its whole process group: SIGTERM, then SIGKILL after `graceMs` (default 2,000). Settles on exit. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts a mounted MCP server's process through the sidecar's one start function (`startProcess`):
 * inside the sandbox with the operator's policy (`--sandbox`, `--network`, `--hide`: the agent's
 * file system and network rules; no turn tightens it, since a server outlives turns), in a process
 * group of its own tracked by the reaper (it dies with the sidecar, SIGKILL included), stdin and
 * stdout piped for the protocol and stderr piped (the caller keeps its tail for error messages).
 *
 * @throws ToolRuntimeError `sandbox_unavailable` when the sandbox is asked for and cannot be had:
 *   the server does not start unconfined (the message names the cause and the fix).
 */
export async function startMcpServerProcess(options: { config: CategoryConfig; command: string; args: string[]; cwd: string; env: NodeJS.ProcessEnv }): Promise<McpServerProcess> {
  const started = await startProcess({
    argv: [options.command, ...options.args],
    cwd: options.cwd,
    env: options.env,
    policy: policyFor(options.config),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const child = started.child as ChildProcessWithoutNullStreams;
  const exited = new Promise<void>((resolve) => {
    const end = () => {
      // What the server left in its group goes with it.
      started.killGroup('SIGKILL');
      resolve();
    };
    child.once('exit', end);
    child.once('error', end);
  });
  return {
    child,
    sandboxed: started.sandboxed,
    exited,
    async stop(graceMs = 2_000) {
      if (started.pid === undefined) return exited;
      started.killGroup('SIGTERM');
      const timer = setTimeout(() => started.killGroup('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
