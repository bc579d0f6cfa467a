import { readdirSync, readFileSync } from 'node:fs';

/** Names one started process in its environment (and its sandbox's, bwrap's own included). */
export const PROCESS_MARK_ENV = 'TOOLS_RUNTIME_PROCESS';

/** Sends `signal` to process group `group`; a group already gone is not an error. */
export function signalGroup(group: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-group, signal);
  } catch {
    // the group is gone already
  }
}

const childrenOf = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

/** The process group of `pid` (field 5 of /proc/PID/stat), or undefined once it is gone. */
function groupOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return undefined;
  }
}

/**
 * Signals the command a sandbox runs, as a terminal's Ctrl-C signals its foreground group: bwrap
 * (`outer`) has one child, the sandbox's init (its PID 1), which leads the session and the process
 * group the command runs in (`--new-session`). Each process below the init still in that group
 * gets the signal by its host pid (the sidecar's user namespace is the sandbox's parent); the init
 * and bwrap never do, since either would die of it and take the sandbox along. A process that made
 * a group of its own (a background job of `set -m`) is left alone, as a terminal would leave it.
 * Nothing is sent while the sandbox is still starting (no command yet).
 */
export function signalSandboxedCommand(outer: number, signal: NodeJS.Signals): void {
  for (const init of childrenOf(outer)) {
    const group = groupOf(init);
    const queue = childrenOf(init);
    for (let seen = 0; queue.length > 0 && seen < 4096; seen++) {
      const pid = queue.shift()!;
      queue.push(...childrenOf(pid));
      if (groupOf(pid) !== group) continue;
      try {
        process.kill(pid, signal);
      } catch {
        // gone meanwhile
      }
    }
  }
}

/** SIGKILLs every live process whose environment carries `mark`; returns how many. */
export function killMarked(mark: string): number {
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
