import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { answerControlRequest } from '../../../../../controller/control-plane/grpc/answer-control-request.js';
import type { ControlPlaneStore } from '../../../../../controller/control-plane/domain/control-plane-store.js';
import { openSqliteStore } from '../../../../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import { WorkflowRunState, type ControlReply, type WorkflowDefinition } from '../../../../../src/gen/toolruntime/v1/control_plane.js';

const definition: WorkflowDefinition = {
  name: 'one',
  maxParallel: 0,
  tasks: [{ id: 'a', prompt: 'do it', resultSchemaJson: '{"type":"object"}', dependsOn: [], maxAttempts: 0 }],
};

function errorOf(reply: ControlReply) {
  return reply.reply?.$case === 'error' ? reply.reply.value : undefined;
}

describe('answerControlRequest', () => {
  let dataDir: string;
  let store: ControlPlaneStore;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'answer-'));
    store = await openSqliteStore({ dataDir });
  });
  afterEach(async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('starts a workflow for the turn\'s agent when agent_id is empty, with the defaults filled', async () => {
    const reply = await answerControlRequest({ store, agentId: 'agent-1', request: { request: { $case: 'startWorkflow', value: { agentId: '', definition } } } });
    expect(reply.reply?.$case).toBe('startWorkflow');
    const run = reply.reply?.$case === 'startWorkflow' ? reply.reply.value.run : undefined;
    expect(run).toMatchObject({ agentId: 'agent-1', state: WorkflowRunState.WORKFLOW_RUN_STATE_RUNNING, maxParallel: 4 });
    expect(run?.tasks[0]?.maxAttempts).toBe(2);
  });

  it('refuses to act for another agent, and hides other agents\' runs', async () => {
    const denied = await answerControlRequest({ store, agentId: 'agent-1', request: { request: { $case: 'listWorkflows', value: { agentId: 'agent-2', limit: 0 } } } });
    expect(errorOf(denied)?.code).toBe('permission_denied');
    const started = await answerControlRequest({ store, agentId: 'agent-2', request: { request: { $case: 'startWorkflow', value: { agentId: '', definition } } } });
    const runId = started.reply?.$case === 'startWorkflow' ? started.reply.value.run!.runId : '';
    const shown = await answerControlRequest({ store, agentId: 'agent-1', request: { request: { $case: 'showWorkflow', value: { agentId: '', runId } } } });
    expect(errorOf(shown)).toMatchObject({ code: 'not_found' });
    const cancelled = await answerControlRequest({ store, agentId: 'agent-1', request: { request: { $case: 'cancelWorkflow', value: { agentId: '', runId, reason: '' } } } });
    expect(errorOf(cancelled)).toMatchObject({ code: 'not_found' });
    const listed = await answerControlRequest({ store, agentId: 'agent-1', request: { request: { $case: 'listWorkflows', value: { agentId: '', limit: 0 } } } });
    expect(listed.reply?.$case === 'listWorkflows' ? listed.reply.value.runs : undefined).toEqual([]);
    // An operator (no turn agent) sees it.
    const operator = await answerControlRequest({ store, request: { request: { $case: 'showWorkflow', value: { agentId: '', runId } } } });
    expect(operator.reply?.$case).toBe('showWorkflow');
  });

  it('answers an invalid definition with a ControlError the model can act on, and stores nothing', async () => {
    const bad: WorkflowDefinition = { ...definition, tasks: [...definition.tasks, { ...definition.tasks[0]!, dependsOn: ['missing'] }] };
    const reply = await answerControlRequest({ store, agentId: 'agent-1', request: { request: { $case: 'startWorkflow', value: { agentId: '', definition: bad } } } });
    expect(errorOf(reply)?.code).toBe('invalid_request');
    expect(errorOf(reply)?.message).toContain('task id "a" is used more than once');
    expect(await store.workflows.listRuns({ limit: 10 })).toEqual([]);
  });

  it('cancels a running workflow once and tells the runner hook', async () => {
    const cancelledRuns: string[] = [];
    const hooks = { workflowRunner: { adopt: () => {}, cancelled: (runId: string) => cancelledRuns.push(runId) } };
    const started = await answerControlRequest({ store, agentId: 'agent-1', hooks, request: { request: { $case: 'startWorkflow', value: { agentId: '', definition } } } });
    const runId = started.reply?.$case === 'startWorkflow' ? started.reply.value.run!.runId : '';
    const cancel = () => answerControlRequest({ store, agentId: 'agent-1', hooks, request: { request: { $case: 'cancelWorkflow', value: { agentId: '', runId, reason: 'enough' } } } });
    const first = await cancel();
    expect(first.reply?.$case === 'cancelWorkflow' ? first.reply.value.run : undefined).toMatchObject({ state: WorkflowRunState.WORKFLOW_RUN_STATE_CANCELLED, error: 'enough' });
    expect(cancelledRuns).toEqual([runId]);
    expect(errorOf(await cancel())?.message).toMatch(/already cancelled/);
  });

  it('answers an operation without a handler, or no operation, with an error rather than a throw', async () => {
    expect(errorOf(await answerControlRequest({ store, agentId: 'a', request: { request: undefined } }))?.code).toBe('invalid_request');
  });
});

describe('toProtoWorkflowRun', () => {
  it('keeps a shown run under the reply budget and names what it left out', async () => {
    const { toProtoWorkflowRun, MAX_REPLY_TEXT_BYTES } = await import('../../../../../controller/control-plane/grpc/to-proto-workflow-run.js');
    const big = 'x'.repeat(400_000);
    const tasks = ['a', 'b', 'c'].map((taskId) => ({
      taskId,
      state: 'committed' as const,
      attempts: 1,
      failedAttempts: 0,
      maxAttempts: 2,
      dependsOn: [],
      prompt: 'p',
      resultSchemaJson: '{}',
      resultJson: JSON.stringify(big),
    }));
    const run = toProtoWorkflowRun({ runId: 'r', agentId: 'a', name: 'n', state: 'succeeded', maxParallel: 1, createdAt: '', tasks });
    const text = run.tasks.reduce((sum, task) => sum + task.resultJson.length + task.prompt.length + task.resultSchemaJson.length, 0);
    expect(text).toBeLessThanOrEqual(MAX_REPLY_TEXT_BYTES);
    expect(run.tasks.map((task) => task.resultJson.length > 0)).toEqual([true, true, false]);
    expect(run.tasks[2]?.error).toBe(`(left out of this reply to keep it under ${MAX_REPLY_TEXT_BYTES} bytes: result)`);
    expect(run.tasks[0]?.error).toBe('');
    const listed = toProtoWorkflowRun({ runId: 'r', agentId: 'a', name: 'n', state: 'succeeded', maxParallel: 1, createdAt: '', tasks }, { withDetail: false });
    expect(listed.tasks.every((task) => task.resultJson === '' && task.prompt === '' && task.error === '')).toBe(true);
  });
});
