/**
 * What both stores decide the same way about a run's tasks: which are ready to be claimed, whether
 * the run is over, and the words a failed run records.
 */

/** The little a readiness decision needs to know of a task. */
export interface TaskReadiness {
  taskId: string;
  state: 'pending' | 'running' | 'committed' | 'failed' | 'skipped' | 'cancelled';
  dependsOn: readonly string[];
}

/** The pending tasks whose dependencies are all committed, in definition order. */
export function readyTasks<T extends TaskReadiness>(tasks: readonly T[]): T[] {
  const committed = new Set(tasks.filter((task) => task.state === 'committed').map((task) => task.taskId));
  return tasks.filter((task) => task.state === 'pending' && task.dependsOn.every((id) => committed.has(id)));
}

/** Whether every task of a run is committed (the run succeeded). */
export function allCommitted(tasks: readonly TaskReadiness[]): boolean {
  return tasks.every((task) => task.state === 'committed');
}

/** The error a run records when one of its tasks used up its attempts. */
export function taskFailedError(taskId: string, failedAttempts: number, reason: string): string {
  return `task "${taskId}" failed after ${failedAttempts} attempt${failedAttempts === 1 ? '' : 's'}: ${reason || 'no reason'}`;
}

/** What an attempt left running by a runner that is gone is logged with. */
export const INTERRUPTED_BY_GONE_RUNNER = 'the runner that ran this attempt stopped or lost its claim';
