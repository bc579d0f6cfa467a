import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { sharedProcessGroupReaper } from '../computer/process-group-reaper.js';

/** A started stdio MCP server process. */
export interface McpServerProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Settles once the process has exited (however). */
  readonly exited: Promise<void>;
  /** Ends its whole process group: SIGTERM, then SIGKILL after `graceMs` (default 2,000). Settles on exit. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * The one place the sidecar starts a mounted MCP server's process: `command args` in its own
 * process group (so a stop reaches what it started), tracked by the sidecar's process-group
 * reaper (so it dies with the sidecar, SIGKILL included), stdin and stdout piped for the protocol,
 * stderr piped (the caller keeps a tail for error messages).
 *
 * Confinement: this is where the sandbox's start function takes over once it exists (the design's
 * one way to start a process); until then the server runs with the sidecar's user, its cwd (the
 * workspace by default) and the environment the caller built (allow-listed variables only).
 * Never throws for a missing command: the child emits `error` and `exited` settles.
 */
export function startMcpServerProcess(options: { command: string; args: string[]; cwd: string; env: NodeJS.ProcessEnv }): McpServerProcess {
  const child = spawn(options.command, options.args, { cwd: options.cwd, env: options.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  const reaper = sharedProcessGroupReaper();
  const pid = child.pid;
  if (pid !== undefined) reaper.track(pid);
  const exited = new Promise<void>((resolve) => {
    let done = false;
    const end = () => {
      if (done) return;
      done = true;
      if (pid !== undefined) {
        // What the server left in its group goes with it.
        killGroup(pid, 'SIGKILL');
        reaper.release(pid);
      }
      resolve();
    };
    child.once('exit', end);
    child.once('error', end);
  });
  return {
    child,
    exited,
    async stop(graceMs = 2_000) {
      if (pid === undefined) return exited;
      killGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone already
  }
}
