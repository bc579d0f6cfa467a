import { describe, expect, it } from 'vitest';
import { collectToolSchemas, isToolRuntimeError, validateToolArguments, type WorkerAgentTool } from '../../../../src/index.js';
import type { ControlReply, ControlRequest } from '../../../../src/gen/toolruntime/v1/control_plane.js';
import { createBackgroundJobTools } from '../../../../sidecar/categories/background-jobs.js';
import type { CategoryContext, ControlChannel } from '../../../../sidecar/categories/category.js';
import { createScheduleTools } from '../../../../sidecar/categories/schedule.js';
import { createWorkflowTools } from '../../../../sidecar/categories/workflow.js';
import { testConfig, testContext, toolNamed } from './tool-harness.js';

/** A channel that records every request and answers with the scripted reply. */
function scriptedChannel(answer: (request: ControlRequest) => ControlReply) {
  const sent: Array<{ callId: string; request: ControlRequest }> = [];
  const channel: ControlChannel = {
    async request(callId, request) {
      sent.push({ callId, request });
      return answer(request);
    },
  };
  return { channel, sent };
}

const schedule = { scheduleId: 's-1', agentId: 'agent-1', prompt: 'Summarise the inbox', cron: '0 9 * * 1-5', at: '', timeZone: 'Europe/Paris', nextFireAt: '2026-12-01T08:00:00.000Z', lastFiredAt: '', firedCount: 0, missedCount: 2, createdAt: '2026-11-30T21:00:00.000Z' };
const job = { jobId: 'job-7', agentId: 'agent-1', prompt: 'Check the build', state: 3, finalText: 'The build is green.', error: '', createdAt: '2026-11-30T21:00:00.000Z', startedAt: '2026-11-30T21:00:01.000Z', finishedAt: '2026-11-30T21:00:09.000Z' };
const run = {
  runId: 'run-3', agentId: 'agent-1', name: 'research', state: 1, createdAt: '2026-11-30T21:00:00.000Z', finishedAt: '', error: '', maxParallel: 2,
  tasks: [
    { taskId: 'a', state: 3, attempts: 1, maxAttempts: 2, dependsOn: [], resultJson: '{"summary":"done"}', error: '', prompt: 'p', resultSchemaJson: '{}' },
    { taskId: 'b', state: 2, attempts: 1, maxAttempts: 2, dependsOn: ['a'], resultJson: '', error: '', prompt: 'q', resultSchemaJson: '{}' },
  ],
};

const config = testConfig({ workspace: '/nonexistent', stateDir: '/nonexistent' });
const context = (channel: ControlChannel | undefined, turn: Parameters<typeof testContext>[1] = {}): CategoryContext => ({
  ...testContext(config, { controlPlane: channel !== undefined, ...turn }),
  ...(channel ? { control: channel } : {}),
});
const allTools = (channel: ControlChannel) => {
  const ctx = context(channel, { canSpawnJobs: true });
  return [...createScheduleTools(ctx), ...createBackgroundJobTools(ctx), ...createWorkflowTools(ctx)];
};

async function runTool(tool: WorkerAgentTool, argumentsJson: string) {
  const validated = validateToolArguments(tool, argumentsJson);
  if (!validated.ok) throw new Error(`invalid: ${validated.error.message}`);
  const result = await tool.execute(validated.value, { signal: AbortSignal.timeout(5_000), callId: 'call-9', emit: async () => {} });
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

describe('the control-plane tools', () => {
  it('are absent without a control channel, in task turns, and (jobs) without can_spawn_jobs', () => {
    const { channel } = scriptedChannel(() => ({ reply: undefined }));
    expect(createScheduleTools(context(undefined))).toEqual([]);
    expect(createWorkflowTools(context(undefined))).toEqual([]);
    expect(createBackgroundJobTools(context(undefined, { canSpawnJobs: true }))).toEqual([]);
    expect(createBackgroundJobTools(context(channel, { canSpawnJobs: false }))).toEqual([]);
    expect(createWorkflowTools(context(channel, { kind: 'workflow_task', resultSchemaJson: '{"type":"object"}' }))).toEqual([]);
  });

  it('carry flags that fit what they do, and collect into valid schemas', () => {
    const { channel } = scriptedChannel(() => ({ reply: undefined }));
    const tools = allTools(channel);
    const flags = Object.fromEntries(tools.map((tool) => [tool.name, `${tool.executionMode}${tool.isReadOnly ? ' read-only' : ''}${tool.isDestructive ? ' destructive' : ''}`]));
    expect(flags).toEqual({
      schedule_create: 'sequential',
      schedule_list: 'parallel read-only',
      schedule_delete: 'sequential destructive',
      job_start: 'sequential',
      job_list: 'parallel read-only',
      job_show: 'parallel read-only',
      job_cancel: 'sequential destructive',
      workflow_start: 'sequential',
      workflow_show: 'parallel read-only',
      workflow_list: 'parallel read-only',
      workflow_cancel: 'sequential destructive',
    });
    const schemas = collectToolSchemas(tools);
    expect(schemas.find((entry) => entry.name === 'schedule_create')!.parameters).toMatchObject({ type: 'object', properties: { prompt: { type: 'string' }, cron: { type: 'string' } } });
  });

  it('schedule_create sends the typed request for the turn\'s agent (left empty) and reports the id and next firing', async () => {
    const { channel, sent } = scriptedChannel(() => ({ reply: { $case: 'createSchedule', value: { schedule } } }));
    const text = await runTool(toolNamed(allTools(channel), 'schedule_create'), JSON.stringify({ prompt: 'Summarise the inbox', cron: '0 9 * * 1-5', time_zone: 'Europe/Paris' }));
    expect(sent).toEqual([
      { callId: 'call-9', request: { request: { $case: 'createSchedule', value: { agentId: '', prompt: 'Summarise the inbox', cron: '0 9 * * 1-5', at: '', timeZone: 'Europe/Paris' } } } },
    ]);
    expect(text).toContain('schedule s-1: cron "0 9 * * 1-5" in Europe/Paris');
    expect(text).toContain('next firing: 2026-12-01T08:00:00.000Z');
    expect(text).toContain('missed 2');
    await runTool(toolNamed(allTools(channel), 'schedule_create'), JSON.stringify({ prompt: 'once', at: '2026-12-24T18:00:00Z' }));
    expect(sent[1]!.request.request).toMatchObject({ value: { at: '2026-12-24T18:00:00Z', cron: '', timeZone: 'UTC' } });
  });

  it('refuses schedules with both or neither of cron and at, and unknown time zones, before anything is sent', () => {
    const { channel, sent } = scriptedChannel(() => ({ reply: undefined }));
    const tool = toolNamed(allTools(channel), 'schedule_create');
    for (const [args, message] of [
      [{ prompt: 'x', cron: '* * * * *', at: '2026-12-24T18:00:00Z' }, 'exactly one of cron'],
      [{ prompt: 'x' }, 'exactly one of cron'],
      [{ prompt: 'x', cron: '* * * * *', time_zone: 'Mars/Olympus' }, 'IANA time zone'],
      [{ prompt: 'x', at: 'next tuesday' }, 'at'],
    ] as const) {
      const validated = validateToolArguments(tool, JSON.stringify(args));
      expect(validated.ok, JSON.stringify(args)).toBe(false);
      if (!validated.ok) expect(validated.error.message).toContain(message);
    }
    expect(sent).toEqual([]);
  });

  it('a ControlError reply becomes a tool failure the model can read', async () => {
    const { channel } = scriptedChannel(() => ({ reply: { $case: 'error', value: { code: 'not_found', message: 'no job job-404 for this agent' } } }));
    const error = await runTool(toolNamed(allTools(channel), 'job_show'), '{"job_id":"job-404"}').catch((caught: unknown) => caught);
    expect(isToolRuntimeError(error, 'tool_failed')).toBe(true);
    expect((error as Error).message).toBe('the control plane refused (not_found): no job job-404 for this agent');
  });

  it('job_show shows the final text whole; job_list one line each', async () => {
    const { channel } = scriptedChannel((request) =>
      request.request?.$case === 'listJobs' ? { reply: { $case: 'listJobs', value: { jobs: [job, { ...job, jobId: 'job-8', state: 2, finalText: '' }] } } } : { reply: { $case: 'showJob', value: { job } } },
    );
    const shown = await runTool(toolNamed(allTools(channel), 'job_show'), '{"job_id":"job-7"}');
    expect(shown).toContain('job job-7: succeeded');
    expect(shown).toContain('final text:\nThe build is green.');
    const listed = await runTool(toolNamed(allTools(channel), 'job_list'), '{}');
    expect(listed.split('\n')[0]).toBe('2 jobs:');
    expect(listed).toContain('job job-8: running');
  });

  it('workflow_start sends the definition with each result schema as JSON text; shape limits apply first', async () => {
    const { channel, sent } = scriptedChannel(() => ({ reply: { $case: 'startWorkflow', value: { run } } }));
    const tool = toolNamed(allTools(channel), 'workflow_start');
    const resultSchema = { type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'] };
    const text = await runTool(tool, JSON.stringify({ name: 'research', max_parallel: 2, tasks: [{ id: 'a', prompt: 'find', result_schema: resultSchema }, { id: 'b', prompt: 'sum', result_schema: resultSchema, depends_on: ['a'], max_attempts: 3 }] }));
    expect(sent[0]!.request.request).toEqual({
      $case: 'startWorkflow',
      value: {
        agentId: '',
        definition: {
          name: 'research',
          maxParallel: 2,
          tasks: [
            { id: 'a', prompt: 'find', resultSchemaJson: JSON.stringify(resultSchema), dependsOn: [], maxAttempts: 0 },
            { id: 'b', prompt: 'sum', resultSchemaJson: JSON.stringify(resultSchema), dependsOn: ['a'], maxAttempts: 3 },
          ],
        },
      },
    });
    expect(text).toContain('workflow run run-3 "research": running; tasks: 1 committed, 1 running');
    expect(text).toContain('task b: running, attempt 1/2 after a');
    const tooMany = Array.from({ length: 501 }, (_, index) => ({ id: `t${index}`, prompt: 'x', result_schema: {} }));
    expect(validateToolArguments(tool, JSON.stringify({ name: 'big', tasks: tooMany })).ok).toBe(false);
    expect(validateToolArguments(tool, JSON.stringify({ name: 'bad id', tasks: [{ id: 'has space', prompt: 'x', result_schema: {} }] })).ok).toBe(false);
    expect(validateToolArguments(tool, JSON.stringify({ name: 'no schema', tasks: [{ id: 'a', prompt: 'x', result_schema: 'string' }] })).ok).toBe(false);
  });

  it('workflow_show includes the committed results', async () => {
    const { channel } = scriptedChannel(() => ({ reply: { $case: 'showWorkflow', value: { run } } }));
    const text = await runTool(toolNamed(allTools(channel), 'workflow_show'), '{"run_id":"run-3"}');
    expect(text).toContain('result: {"summary":"done"}');
  });

  it('a reply of the wrong kind is a failure, not a misread', async () => {
    const { channel } = scriptedChannel(() => ({ reply: { $case: 'listJobs', value: { jobs: [] } } }));
    const error = await runTool(toolNamed(allTools(channel), 'workflow_list'), '{}').catch((caught: unknown) => caught);
    expect(isToolRuntimeError(error, 'tool_failed')).toBe(true);
    expect((error as Error).message).toContain('answered listJobs instead of listWorkflows');
  });
});
