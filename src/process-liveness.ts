import { readFileSync } from 'node:fs';

/**
 * Whether process `pid` runs on this machine. A zombie does not: a process SIGKILLed while its
 * parent died too stays a zombie for as long as nothing reaps it (a container's PID 1 often does
 * not), and `kill(pid, 0)` still succeeds on it. Where `/proc` cannot be read, the signal check
 * alone decides. A process of another user (EPERM) runs.
 */
export function processIsRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch (error) {
    // Gone between the two checks, or no /proc here.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}
