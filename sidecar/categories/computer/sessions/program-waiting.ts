import { readdirSync, readFileSync } from 'node:fs';

/** A session's process tree larger than this is not walked (it is busy, as far as waiting goes). */
const MAX_PROCESSES = 64;

/** What the processes of a session are doing, as far as its answer goes. */
export type ProgramState = 'waiting' | 'busy' | 'ending';

/**
 * `waiting` when every thread of every process in the tree under `pid` (the session's process: its
 * bwrap, and everything in the sandbox, whose host pids /proc shows) sleeps: none runs (R) or waits
 * on the disk (D). That is a program that printed its answer and reads its input again (a REPL at
 * its prompt, `cat`, a shell), or waits on a timer or the network. `ending` when a process of the
 * tree has exited and is not yet reaped (a zombie), or `pid` itself is gone: the command is on its
 * way out, and its exit code is the better answer; so is a `wrapper` (bwrap, which always has the
 * sandbox's init below it while the command runs) left without children, or whose init is: the
 * command has been reaped and the init is on its way out (it may sleep for a moment there, which
 * read as `waiting` and returned a finished command as still running). `busy` otherwise, or when
 * the tree is too large.
 * Used only once output has come and stopped (session-wait.ts). Reads
 * /proc/<pid>/task/<tid>/{stat,children}: a few small reads per process, tens of microseconds for a
 * REPL's tree.
 */
export function programState(pid: number, options: { wrapper?: boolean } = {}): ProgramState {
  const stack = [pid];
  let walked = 0;
  // Under a wrapper: the root's children (the sandbox's init), and whether any of them has a child.
  const rootChildren = new Set<number>();
  let initHasChildren = false;
  while (stack.length > 0) {
    const current = stack.pop()!;
    if (++walked > MAX_PROCESSES) return 'busy';
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${current}/task`);
    } catch {
      if (current === pid) return 'ending';
      continue; // exited while we looked
    }
    for (const task of tasks) {
      try {
        const stat = readFileSync(`/proc/${current}/task/${task}/stat`, 'latin1');
        const state = stat[stat.lastIndexOf(')') + 2];
        if (state === 'Z' || state === 'X') return 'ending';
        if (state === 'R' || state === 'D') return 'busy';
        const children = readFileSync(`/proc/${current}/task/${task}/children`, 'latin1').trim();
        if (children !== '') {
          for (const child of children.split(' ')) {
            stack.push(Number(child));
            if (current === pid) rootChildren.add(Number(child));
          }
          if (rootChildren.has(current)) initHasChildren = true;
        }
      } catch {
        // the thread ended while we looked
      }
    }
  }
  return options.wrapper && !initHasChildren ? 'ending' : 'waiting';
}
