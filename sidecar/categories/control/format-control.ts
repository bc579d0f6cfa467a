// What the model reads back from a control-plane operation: short lines, ids first, so the next
// call (show, cancel, delete) can use them.
import {
  jobStateToJSON,
  workflowRunStateToJSON,
  workflowTaskStateToJSON,
  type Job,
  type Schedule,
  type WorkflowRun,
} from './control-messages.js';

/** `JOB_STATE_RUNNING` → `running`. */
const stateName = (text: string, prefix: string) => (text.startsWith(prefix) ? text.slice(prefix.length) : text).toLowerCase();

/** Cuts long text (a prompt, a final answer) for a listing. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** One schedule, on a few lines. */
export function formatSchedule(schedule: Schedule): string {
  const when = schedule.cron ? `cron "${schedule.cron}" in ${schedule.timeZone || 'UTC'}` : `once at ${schedule.at}${schedule.timeZone && schedule.timeZone !== 'UTC' ? ` (${schedule.timeZone})` : ''}`;
  const lines = [
    `schedule ${schedule.scheduleId}: ${when}`,
    `  next firing: ${schedule.nextFireAt || 'none left'}; fired ${schedule.firedCount} time${schedule.firedCount === 1 ? '' : 's'}${schedule.lastFiredAt ? `, last at ${schedule.lastFiredAt}` : ''}${schedule.missedCount ? `; missed ${schedule.missedCount} while no controller ran` : ''}`,
    `  prompt: ${clip(schedule.prompt, 300)}`,
  ];
  return lines.join('\n');
}

/** One job; `full` adds its final text and error whole. */
export function formatJob(job: Job, options: { full?: boolean } = {}): string {
  const state = stateName(jobStateToJSON(job.state), 'JOB_STATE_');
  const times = [`created ${job.createdAt || '?'}`, job.startedAt ? `started ${job.startedAt}` : '', job.finishedAt ? `finished ${job.finishedAt}` : ''].filter(Boolean).join(', ');
  const lines = [`job ${job.jobId}: ${state} (${times})`, `  prompt: ${options.full ? job.prompt : clip(job.prompt, 200)}`];
  if (job.error) lines.push(`  error: ${options.full ? job.error : clip(job.error, 300)}`);
  if (job.finalText) lines.push(options.full ? `  final text:\n${job.finalText}` : `  final text: ${clip(job.finalText, 300)}`);
  return lines.join('\n');
}

/** One workflow run; `tasks` adds a line per task (with committed results when `results`). */
export function formatWorkflowRun(run: WorkflowRun, options: { tasks?: boolean; results?: boolean } = {}): string {
  const state = stateName(workflowRunStateToJSON(run.state), 'WORKFLOW_RUN_STATE_');
  const counts = new Map<string, number>();
  for (const task of run.tasks) {
    const name = stateName(workflowTaskStateToJSON(task.state), 'WORKFLOW_TASK_STATE_');
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  const summary = [...counts].map(([name, count]) => `${count} ${name}`).join(', ') || 'no tasks';
  const lines = [`workflow run ${run.runId} "${run.name}": ${state}; tasks: ${summary}`];
  lines.push(`  created ${run.createdAt || '?'}${run.finishedAt ? `, finished ${run.finishedAt}` : ''}${run.maxParallel ? `, max_parallel ${run.maxParallel}` : ''}`);
  if (run.error) lines.push(`  error: ${run.error}`);
  if (options.tasks) {
    for (const task of run.tasks) {
      const name = stateName(workflowTaskStateToJSON(task.state), 'WORKFLOW_TASK_STATE_');
      const deps = task.dependsOn.length ? ` after ${task.dependsOn.join(', ')}` : '';
      lines.push(`  - task ${task.taskId}: ${name}, attempt ${task.attempts}/${task.maxAttempts}${deps}${task.error ? `; error: ${clip(task.error, 300)}` : ''}`);
      if (options.results && task.resultJson) lines.push(`    result: ${clip(task.resultJson, 2_000)}`);
    }
  }
  return lines.join('\n');
}
