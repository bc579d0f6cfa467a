import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import type { CategoryConfig } from '../category-config.js';
import { instanceEnv } from '../computer/leftover-commands.js';
import { hiddenPathTest, startProcess } from '../computer/sandbox/index.js';
import { policyFor } from '../process-policy.js';

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
  const policy = policyFor(options.config);
  const started = await startProcess({
    argv: [options.command, ...options.args],
    cwd: options.cwd,
    // Marked as this sidecar's, as every command is: a restart kills what a dead sidecar left.
    env: { ...options.env, ...instanceEnv() },
    policy: { ...policy, readable: [...policy.readable, ...ownPaths(options, hiddenPathTest(policy))] },
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

/**
 * The server's own program and script folders, kept visible (read-only) in its sandbox: the
 * command when it names a path, and each argument that names an existing file or folder (resolved
 * from `cwd`), as the package that holds it (the nearest folder up with a `package.json`, so its
 * `node_modules` resolve) or else its own folder. Without this, a server whose script lives under `/tmp`
 * (a checkout made with `mktemp -d`) is hidden by the sandbox's private `/tmp` and cannot start.
 * Nothing the sandbox hides is brought back.
 */
function ownPaths(options: { command: string; args: string[]; cwd: string }, hidden: (absolute: string) => boolean): string[] {
  const found = new Set<string>();
  for (const given of [options.command, ...options.args]) {
    if (given === '' || given.startsWith('-') || (given === options.command && !given.includes('/'))) continue;
    const absolute = path.resolve(options.cwd, given);
    if (!existsSync(absolute)) continue;
    let real: string;
    try {
      real = realpathSync(absolute);
    } catch {
      continue;
    }
    const folder = packageRoot(statSync(real).isDirectory() ? real : path.dirname(real));
    if (folder === '/' || hidden(folder)) continue;
    found.add(folder);
  }
  return [...found];
}

/** The nearest folder at or above `folder` with a package.json, or `folder` itself. */
function packageRoot(folder: string): string {
  for (let at = folder; at !== path.dirname(at); at = path.dirname(at)) {
    if (existsSync(path.join(at, 'package.json'))) return at;
  }
  return folder;
}
