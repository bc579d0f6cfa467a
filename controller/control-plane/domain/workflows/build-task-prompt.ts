import type { WorkflowTaskRecord } from './workflow-store.js';

/**
 * A task turn's prompt: the task's own prompt, followed by the committed results of the tasks it
 * depends on (in its `depends_on` order), each as JSON.
 *
 * @throws ToolRuntimeError never; a dependency without a committed result is a bug of the caller
 *   and shows as `(no committed result)`.
 */
export function buildTaskPrompt(task: WorkflowTaskRecord, tasks: ReadonlyMap<string, WorkflowTaskRecord>): string {
  if (task.dependsOn.length === 0) return task.prompt;
  const lines = task.dependsOn.map((id) => `- task "${id}": ${tasks.get(id)?.resultJson ?? '(no committed result)'}`);
  return `${task.prompt}\n\nThe committed results of the tasks this task depends on, as JSON:\n${lines.join('\n')}`;
}
