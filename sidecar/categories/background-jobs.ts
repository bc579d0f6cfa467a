import { z } from 'zod';
import { defineWorkerTool, textResult, type WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';
import { callControl } from './control/call-control.js';
import { formatJob } from './control/format-control.js';
import { MAX_PROMPT_CHARS } from './schedule.js';

const jobId = z.string().min(1).max(200).describe('The job id, as job_start or job_list returned it.');

/**
 * The background job tools (`job_start`, `job_list`, `job_show`, `job_cancel`): a job is a text
 * turn of the same agent that runs on its own, in the background. Offered only when the turn may
 * spawn jobs (`can_spawn_jobs`, false in a job's own turn) and its client answers control requests.
 */
export function createBackgroundJobTools(context: CategoryContext): WorkerAgentTool[] {
  const channel = context.control;
  if (!channel || context.turn.kind !== 'text' || !context.turn.canSpawnJobs) return [];
  return [
    defineWorkerTool({
      name: 'job_start',
      description:
        'Starts a background job: a separate turn of yours that works on prompt on its own while this turn goes on. Returns the job id; check it later with job_show.',
      schema: z.object({ prompt: z.string().min(1).max(MAX_PROMPT_CHARS).describe('What the job should do, as complete instructions: it does not see this conversation.') }),
      describeActivity: () => 'Starting a background job',
      async execute({ prompt }, { callId, signal }) {
        const { job } = await callControl({ channel, callId, signal, expect: 'startJob', request: { $case: 'startJob', value: { agentId: '', prompt } } });
        if (!job) return textResult('The control plane started the job but sent nothing back; list the jobs to see it.');
        return textResult(`Started ${formatJob(job)}`, { details: { job } });
      },
    }),
    defineWorkerTool({
      name: 'job_list',
      description: 'Lists your background jobs, newest first: id, state, timestamps, and the start of their final text.',
      schema: z.object({ limit: z.number().int().min(1).max(200).optional().describe('At most this many (default 50).') }),
      executionMode: 'parallel',
      isReadOnly: true,
      describeActivity: () => 'Listing background jobs',
      async execute({ limit }, { callId, signal }) {
        const { jobs } = await callControl({ channel, callId, signal, expect: 'listJobs', request: { $case: 'listJobs', value: { agentId: '', limit: limit ?? 0 } } });
        if (jobs.length === 0) return textResult('You have no background jobs.');
        return textResult(`${jobs.length} job${jobs.length === 1 ? '' : 's'}:\n${jobs.map((job) => formatJob(job)).join('\n')}`, { details: { count: jobs.length } });
      },
    }),
    defineWorkerTool({
      name: 'job_show',
      description: 'Shows one background job: its state, timestamps, and its final text once it finished.',
      schema: z.object({ job_id: jobId }),
      executionMode: 'parallel',
      isReadOnly: true,
      describeActivity: ({ job_id }) => `Checking job ${job_id}`,
      async execute({ job_id }, { callId, signal }) {
        const { job } = await callControl({ channel, callId, signal, expect: 'showJob', request: { $case: 'showJob', value: { agentId: '', jobId: job_id } } });
        return textResult(job ? formatJob(job, { full: true }) : `No job ${job_id}.`, { details: { job } });
      },
    }),
    defineWorkerTool({
      name: 'job_cancel',
      description: 'Cancels one of your background jobs that is queued or running; its turn is stopped.',
      schema: z.object({ job_id: jobId, reason: z.string().max(500).optional().describe('Why, for the record.') }),
      isDestructive: true,
      describeActivity: ({ job_id }) => `Cancelling job ${job_id}`,
      async execute({ job_id, reason }, { callId, signal }) {
        const { job } = await callControl({
          channel,
          callId,
          signal,
          expect: 'cancelJob',
          request: { $case: 'cancelJob', value: { agentId: '', jobId: job_id, reason: reason ?? '' } },
        });
        return textResult(job ? `Cancelled ${formatJob(job)}` : `Cancelled job ${job_id}.`);
      },
    }),
  ];
}
