import { z } from 'zod';
import { defineWorkerTool, textResult, type WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';
import { callControl } from './control/call-control.js';
import { formatWorkflowRun } from './control/format-control.js';

/**
 * Shape limits of a workflow definition, the controller's own (validate-workflow-definition.ts), so
 * a refusal here never hides one the controller would explain better; it checks the rest (cycles,
 * unknown dependencies, schemas that compile, running workflows per agent).
 */
export const WORKFLOW_LIMITS = { maxTasks: 500, maxPromptChars: 20_000, maxSchemaChars: 20_000, maxParallel: 32, maxAttempts: 10 } as const;

const taskId = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'task ids are 1 to 64 letters, digits, "_", "." or "-"')
  .describe('Unique within the workflow; other tasks name it in depends_on.');

const taskSchema = z.object({
  id: taskId,
  prompt: z.string().min(1).max(WORKFLOW_LIMITS.maxPromptChars).describe('What the task must do. It runs as an isolated turn with web tools only and sees the committed results of its dependencies.'),
  result_schema: z
    .record(z.string(), z.unknown())
    .refine((schema) => JSON.stringify(schema).length <= WORKFLOW_LIMITS.maxSchemaChars, { message: `the result schema is over ${WORKFLOW_LIMITS.maxSchemaChars} characters of JSON` })
    .describe('A JSON Schema object the task\'s result must match, for example {"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}.'),
  depends_on: z.array(taskId).max(WORKFLOW_LIMITS.maxTasks).optional().describe('Ids of the tasks whose results this task needs; it starts once they are committed.'),
  max_attempts: z.number().int().min(1).max(WORKFLOW_LIMITS.maxAttempts).optional().describe('Attempts before the task fails the run (default 2).'),
});

const startSchema = z.object({
  name: z.string().min(1).max(200).describe('A short name for the workflow.'),
  tasks: z.array(taskSchema).min(1).max(WORKFLOW_LIMITS.maxTasks),
  max_parallel: z.number().int().min(1).max(WORKFLOW_LIMITS.maxParallel).optional().describe('How many tasks may run at once (default: the controller\'s).'),
});

const runId = z.string().min(1).max(200).describe('The run id, as workflow_start or workflow_list returned it.');

/**
 * The workflow tools of a main text turn (`workflow_start`, `workflow_show`, `workflow_list`,
 * `workflow_cancel`), sent to the control plane over the turn's own stream. Never in a workflow
 * task turn; absent (`[]`) when the client does not answer control requests.
 */
export function createWorkflowTools(context: CategoryContext): WorkerAgentTool[] {
  const channel = context.control;
  if (!channel || context.turn.kind !== 'text') return [];
  return [
    defineWorkerTool({
      name: 'workflow_start',
      description:
        'Starts a workflow: a graph of tasks that run as isolated turns (web tools only), each finishing by submitting a value that matches its result_schema. Tasks run once the tasks in their depends_on are committed. Returns the run id; follow it with workflow_show.',
      schema: startSchema,
      describeActivity: ({ name, tasks }) => `Starting workflow "${name}" (${tasks.length} task${tasks.length === 1 ? '' : 's'})`,
      async execute({ name, tasks, max_parallel }, { callId, signal }) {
        const { run } = await callControl({
          channel,
          callId,
          signal,
          expect: 'startWorkflow',
          request: {
            $case: 'startWorkflow',
            value: {
              agentId: '',
              definition: {
                name,
                maxParallel: max_parallel ?? 0,
                tasks: tasks.map((task) => ({
                  id: task.id,
                  prompt: task.prompt,
                  resultSchemaJson: JSON.stringify(task.result_schema),
                  dependsOn: task.depends_on ?? [],
                  maxAttempts: task.max_attempts ?? 0,
                })),
              },
            },
          },
        });
        if (!run) return textResult('The control plane started the workflow but sent nothing back; list the workflows to see it.');
        return textResult(`Started ${formatWorkflowRun(run, { tasks: true })}`, { details: { runId: run.runId } });
      },
    }),
    defineWorkerTool({
      name: 'workflow_show',
      description: 'Shows one workflow run: its state, each task\'s state and attempts, and the committed results.',
      schema: z.object({ run_id: runId }),
      executionMode: 'parallel',
      isReadOnly: true,
      describeActivity: ({ run_id }) => `Checking workflow ${run_id}`,
      async execute({ run_id }, { callId, signal }) {
        const { run } = await callControl({ channel, callId, signal, expect: 'showWorkflow', request: { $case: 'showWorkflow', value: { agentId: '', runId: run_id } } });
        return textResult(run ? formatWorkflowRun(run, { tasks: true, results: true }) : `No workflow run ${run_id}.`, { details: { run } });
      },
    }),
    defineWorkerTool({
      name: 'workflow_list',
      description: 'Lists your workflow runs, newest first, with their state and task counts.',
      schema: z.object({ limit: z.number().int().min(1).max(200).optional().describe('At most this many (default 50).') }),
      executionMode: 'parallel',
      isReadOnly: true,
      describeActivity: () => 'Listing workflows',
      async execute({ limit }, { callId, signal }) {
        const { runs } = await callControl({ channel, callId, signal, expect: 'listWorkflows', request: { $case: 'listWorkflows', value: { agentId: '', limit: limit ?? 0 } } });
        if (runs.length === 0) return textResult('You have no workflow runs.');
        return textResult(`${runs.length} workflow run${runs.length === 1 ? '' : 's'}:\n${runs.map((run) => formatWorkflowRun(run)).join('\n')}`, { details: { count: runs.length } });
      },
    }),
    defineWorkerTool({
      name: 'workflow_cancel',
      description: 'Cancels a running workflow: running task turns are stopped at once and tasks not started are skipped. Committed results are kept.',
      schema: z.object({ run_id: runId, reason: z.string().max(500).optional().describe('Why, for the record.') }),
      isDestructive: true,
      describeActivity: ({ run_id }) => `Cancelling workflow ${run_id}`,
      async execute({ run_id, reason }, { callId, signal }) {
        const { run } = await callControl({
          channel,
          callId,
          signal,
          expect: 'cancelWorkflow',
          request: { $case: 'cancelWorkflow', value: { agentId: '', runId: run_id, reason: reason ?? '' } },
        });
        return textResult(run ? `Cancelled ${formatWorkflowRun(run, { tasks: true })}` : `Cancelled workflow run ${run_id}.`);
      },
    }),
  ];
}
