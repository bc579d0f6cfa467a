import { readdirSync, readFileSync } from 'node:fs';

/** A session's process tree larger than this is not walked (it is busy, as far as waiting goes). */
const MAX_PROCESSES = 64;

/**
 * True when every thread of every process in the tree under `pid` (the session's process: its
 * bwrap, and everything in the sandbox, whose host pids /proc shows) sleeps: none runs (R) or waits
 * on the disk (D). That is a program that printed its answer and reads its input again (a REPL at
 * its prompt, `cat`, a shell), or waits on a timer or the network. Used only once output has come
 * and stopped (session-wait.ts), to return before the whole settle time: a program still computing
 * is running. Reads /proc/<pid>/task/<tid>/{stat,children}: a few small reads per process, tens of
 * microseconds for a REPL's tree. False when the tree cannot be read (not Linux, gone).
 */
export function programWaiting(pid: number): boolean {
  const stack = [pid];
  let walked = 0;
  while (stack.length > 0) {
    const current = stack.pop()!;
    if (++walked > MAX_PROCESSES) return false;
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${current}/task`);
    } catch {
      if (current === pid) return false;
      continue; // exited while we looked
    }
    for (const task of tasks) {
      try {
        const stat = readFileSync(`/proc/${current}/task/${task}/stat`, 'latin1');
        const state = stat[stat.lastIndexOf(')') + 2];
        if (state === 'R' || state === 'D') return false;
        const children = readFileSync(`/proc/${current}/task/${task}/children`, 'latin1').trim();
        if (children !== '') for (const child of children.split(' ')) stack.push(Number(child));
      } catch {
        // the thread ended while we looked
      }
    }
  }
  return true;
}
