import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { answerControlRequest } from '../../../controller/control-plane/grpc/answer-control-request.js';
import type { ControlPlaneStore } from '../../../controller/control-plane/domain/control-plane-store.js';
import { openSqliteStore } from '../../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import type { WorkflowDefinition } from '../../../controller/control-plane/domain/workflows/workflow-store.js';
import { sidecarTaskTurns, type OpenTaskTurn } from '../../../controller/control-plane/domain/workflows/sidecar-task-turns.js';
import { ControlPlaneError } from '../../../controller/control-plane/domain/control-plane-error.js';
import { WorkflowRunner, type WorkflowRunnerEvent } from '../../../controller/control-plane/domain/workflows/workflow-runner.js';
import { REPAIR_INSTRUCTION } from '../../../controller/loop/run-task-turn.js';
import { createOpenAIResponsesModel } from '../../../controller/model/openai-responses-model.js';
import type { ResponseItem } from '../../../controller/model/responses-model.js';
import { functionCallItem, messageItem } from '../../../controller/model/responses-wire.js';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import type { Logger } from '../../../src/index.js';
import { startScriptedResponsesServer, type ScriptStep, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const scratch = mkdtempSync(join(tmpdir(), 'workflow-it-'));
let sidecar: StartedSidecar;
let client: SidecarClient;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  const workspace = join(scratch, 'workspace');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(workspace);
  sidecar = await startSidecar({
    entry: 'test/fixtures/workflow-fixture-sidecar.ts',
    args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(scratch, 'state')],
  });
  client = createSidecarClient({ address: sidecar.address });
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  client?.close();
  await sidecar?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const nSchema = { type: 'object', properties: { n: { type: 'integer', minimum: 10 } }, required: ['n'], additionalProperties: false };
const submit = (callId: string, result: unknown) => functionCallItem({ callId, name: 'submit_result', arguments: JSON.stringify({ result }) });
const promptText = (body: Record<string, unknown>) => JSON.stringify((body.input as ResponseItem[])[0]);

let dirCounter = 0;
/** A store in a fresh folder, a scripted model, and a runner over the fixture sidecar. */
async function setUp(
  steps: ScriptStep[],
  options: { openTaskTurn?: OpenTaskTurn; leaseMs?: number; attemptTimeoutMs?: number; observe?: (event: WorkflowRunnerEvent) => void; logger?: Logger; wrapStore?: (store: ControlPlaneStore) => ControlPlaneStore } = {},
) {
  const opened = await openSqliteStore({ dataDir: join(scratch, `data-${++dirCounter}`) });
  const store = options.wrapStore ? options.wrapStore(opened) : opened;
  const server = await startScriptedResponsesServer({ steps });
  const model = createOpenAIResponsesModel({ model: 'scripted', apiKey: 'test-key', baseURL: server.baseURL, stream: true, maxRetries: 0 });
  const events: WorkflowRunnerEvent[] = [];
  const runner = new WorkflowRunner({
    store,
    model,
    openTaskTurn: options.openTaskTurn ?? sidecarTaskTurns(client),
    leaseMs: options.leaseMs ?? 10_000,
    ...(options.attemptTimeoutMs ? { attemptTimeoutMs: options.attemptTimeoutMs } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    onEvent: (event) => {
      events.push(event);
      options.observe?.(event);
    },
  });
  cleanups.push(() => opened.close(), () => server.close(), () => runner.close());
  return { store, server, runner, events };
}

async function start(store: ControlPlaneStore, runner: WorkflowRunner, definition: WorkflowDefinition) {
  const run = await store.workflows.createRun({ agentId: 'agent-it', definition, maxRunningPerAgent: 10 });
  runner.adopt(run.runId);
  return run.runId;
}

const task = (id: string, prompt: string, extra: Partial<WorkflowDefinition['tasks'][number]> = {}) => ({
  id,
  prompt,
  resultSchema: nSchema,
  dependsOn: [],
  maxAttempts: 2,
  ...extra,
});

/** Polls `check` every 25 ms until it is true; fails after `timeoutMs`. */
async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('the workflow runner over a real sidecar and a scripted model', () => {
  it('runs a dependent task after its dependency, with the committed result in its prompt', async () => {
    const { store, server, runner } = await setUp([
      (body) => (promptText(body).includes('first task') ? { output: [submit('c1', { n: 11 })] } : { status: 500, body: { error: { message: 'not the first task' } } }),
      (body) => (promptText(body).includes('task \\"a\\": {\\"n\\":11}') ? { output: [submit('c1', { n: 22 })] } : { status: 500, body: { error: { message: 'no dependency result' } } }),
    ]);
    const runId = await start(store, runner, { name: 'chain', maxParallel: 4, tasks: [task('a', 'the first task'), task('b', 'the second task', { dependsOn: ['a'] })] });
    const run = await runner.waitForRun(runId, { signal: AbortSignal.timeout(30_000) });
    expect(run?.state).toBe('succeeded');
    expect(run?.tasks.map((t) => [t.taskId, t.state, t.resultJson])).toEqual([
      ['a', 'committed', '{"n":11}'],
      ['b', 'committed', '{"n":22}'],
    ]);
    expect(server.requests).toHaveLength(2);
    // Each task turn is isolated: only submit_result and the fixture tool, no text-turn tools.
    const names = (server.requests[0]!.tools as Array<{ name?: string }>).map((tool) => tool.name).sort();
    expect(names).toEqual(['submit_result', 'wait_for_abort']);
  });

  it('keeps the turn going after a rejected submission and commits the corrected one', async () => {
    const { store, server, runner } = await setUp([{ output: [submit('c1', { n: 3 })] }, { output: [submit('c2', { n: 12 })] }]);
    const runId = await start(store, runner, { name: 'fix', maxParallel: 1, tasks: [task('a', 'count')] });
    const run = await runner.waitForRun(runId, { signal: AbortSignal.timeout(30_000) });
    expect(run).toMatchObject({ state: 'succeeded', tasks: [{ state: 'committed', resultJson: '{"n":12}', attempts: 1 }] });
    const second = server.requests[1]!.input as ResponseItem[];
    // The sidecar refused the value against the schema; the model read why and the turn went on.
    expect(JSON.stringify(second.at(-1))).toMatch(/invalid_arguments.*result.n: must be >= 10/);
  });

  it('gives prose one repair instruction, then commits the submission', async () => {
    const { store, server, runner } = await setUp([{ output: [messageItem('The answer is 12.')] }, { output: [submit('c1', { n: 12 })] }]);
    const runId = await start(store, runner, { name: 'repair', maxParallel: 1, tasks: [task('a', 'count')] });
    const run = await runner.waitForRun(runId, { signal: AbortSignal.timeout(30_000) });
    expect(run).toMatchObject({ state: 'succeeded', tasks: [{ resultJson: '{"n":12}', attempts: 1 }] });
    const repaired = server.requests[1]!.input as ResponseItem[];
    expect(repaired.at(-1)).toMatchObject({ type: 'message', role: 'user', content: [{ type: 'input_text', text: REPAIR_INSTRUCTION }] });
    expect(repaired.filter((item) => JSON.stringify(item).includes(REPAIR_INSTRUCTION))).toHaveLength(1);
  });

  it('fails an attempt after prose twice and retries the task in a fresh turn', async () => {
    const { store, server, runner, events } = await setUp([
      { output: [messageItem('twelve')] },
      { output: [messageItem('still twelve')] },
      { output: [submit('c1', { n: 12 })] },
    ]);
    const runId = await start(store, runner, { name: 'retry', maxParallel: 1, tasks: [task('a', 'count')] });
    const run = await runner.waitForRun(runId, { signal: AbortSignal.timeout(30_000) });
    expect(run).toMatchObject({ state: 'succeeded', tasks: [{ resultJson: '{"n":12}', attempts: 2 }] });
    // The retry started from the prompt alone, not from the failed attempt's items.
    expect((server.requests[2]!.input as ResponseItem[]).length).toBe(1);
    const attempts = await store.workflows.listAttempts(runId);
    expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([[1, 'failed'], [2, 'committed']]);
    expect(attempts[0]?.error).toMatch(/without submit_result twice/);
    expect(events.filter((event) => event.type === 'attempt-failed')).toHaveLength(1);
  });

  it('does not commit a value the sidecar accepted but the persisted schema rejects', async () => {
    const permissive: OpenTaskTurn = (input) => sidecarTaskTurns(client)({ ...input, resultSchemaJson: '{"type":"object"}' });
    const { store, server, runner } = await setUp([{ output: [submit('c1', { n: 'many' })] }], { openTaskTurn: permissive });
    const runId = await start(store, runner, { name: 'gate', maxParallel: 1, tasks: [task('a', 'count', { maxAttempts: 1 })] });
    const run = await runner.waitForRun(runId, { signal: AbortSignal.timeout(30_000) });
    // The sidecar accepted it (its schema was permissive): one model call, the turn ended there ...
    expect(server.requests).toHaveLength(1);
    // ... but nothing was committed and the run failed with the reasons.
    expect(run?.state).toBe('failed');
    expect(run?.tasks[0]).toMatchObject({ state: 'failed' });
    expect(run?.tasks[0]?.resultJson).toBeUndefined();
    expect(run?.tasks[0]?.error).toMatch(/persisted at workflow start.*n: expected integer/);
  });

  it('cancel aborts the running task turn and its sidecar call, and cancels the run', async () => {
    const probe = join(scratch, 'cancel-probe');
    const { store, runner } = await setUp([{ output: [functionCallItem({ callId: 'c1', name: 'wait_for_abort', arguments: JSON.stringify({ path: probe }) })] }]);
    const runId = await start(store, runner, { name: 'cancel', maxParallel: 2, tasks: [task('a', 'wait'), task('b', 'after', { dependsOn: ['a'] })] });
    await until(() => existsSync(`${probe}.started`), 'the sidecar call to start');
    const reply = await answerControlRequest({
      store,
      agentId: 'agent-it',
      hooks: { workflowRunner: runner },
      request: { request: { $case: 'cancelWorkflow', value: { agentId: '', runId, reason: 'no longer needed' } } },
    });
    expect(reply.reply?.$case).toBe('cancelWorkflow');
    await until(() => existsSync(probe), 'the sidecar call to be aborted');
    expect(JSON.parse(readFileSync(probe, 'utf8'))).toMatchObject({ aborted: true });
    const run = await runner.waitForRun(runId, { signal: AbortSignal.timeout(30_000) });
    expect(run).toMatchObject({ state: 'cancelled', error: 'no longer needed' });
    expect(run?.tasks.map((t) => t.state)).toEqual(['cancelled', 'skipped']);
    expect(runner.activeRuns()).toEqual([]);
  });

  it('a cancel written by another process reaches the running task turn at the next claim renewal', async () => {
    const probe = join(scratch, 'remote-cancel-probe');
    const { store, runner } = await setUp([{ output: [functionCallItem({ callId: 'c1', name: 'wait_for_abort', arguments: JSON.stringify({ path: probe }) })] }], { leaseMs: 600 });
    const runId = await start(store, runner, { name: 'remote', maxParallel: 1, tasks: [task('a', 'wait')] });
    await until(() => existsSync(`${probe}.started`), 'the sidecar call to start');
    // Another process's cancel: its own connection to the file, no hook into this runner.
    const other = await openSqliteStore({ dataDir: dirname(store.location) });
    await other.workflows.finishRun({ runId, state: 'cancelled', error: 'cancelled elsewhere' });
    await other.close();
    await until(() => existsSync(probe), 'the sidecar call to be aborted');
    const run = await runner.waitForRun(runId, { signal: AbortSignal.timeout(30_000) });
    expect(run).toMatchObject({ state: 'cancelled', error: 'cancelled elsewhere', tasks: [{ state: 'cancelled' }] });
    expect(runner.activeRuns()).toEqual([]);
  });

  it('resumes a run whose runner died: committed tasks are kept, the running one runs again as a new attempt', async () => {
    const answer: ScriptStep = (body) => ({ output: [submit('c1', { n: promptText(body).includes('third') ? 33 : 22 })] });
    const { store, server, runner } = await setUp([answer, answer, answer]);
    const definition: WorkflowDefinition = {
      name: 'resume',
      maxParallel: 1,
      tasks: [task('a', 'the first'), task('b', 'the second', { dependsOn: ['a'] }), task('c', 'the third', { dependsOn: ['b'] })],
    };
    // What a SIGKILLed controller leaves: one committed task, and one task it claimed (for an hour)
    // from a process that no longer exists.
    const dead = `${hostname()}:2147483646:deadbeef`;
    const run = await store.workflows.createRun({ agentId: 'agent-it', definition, maxRunningPerAgent: 10 });
    const a = await store.workflows.claimTask({ owner: dead, leaseMs: 3_600_000 });
    await store.workflows.commitResult({ ...a!, resultJson: '{"n":11}' });
    expect(await store.workflows.claimTask({ owner: dead, leaseMs: 3_600_000 })).toMatchObject({ taskId: 'b' });
    runner.adopt(run.runId);
    const resumed = await runner.waitForRun(run.runId, { signal: AbortSignal.timeout(30_000) });
    expect(resumed?.state).toBe('succeeded');
    expect(resumed?.tasks.map((t) => [t.taskId, t.resultJson, t.attempts])).toEqual([
      ['a', '{"n":11}', 1],
      ['b', '{"n":22}', 2],
      ['c', '{"n":33}', 1],
    ]);
    // Task a never ran again: two task turns, for b and c.
    expect(server.requests.map((body) => promptText(body).includes('the second') ? 'b' : promptText(body).includes('the third') ? 'c' : 'other')).toEqual(['b', 'c']);
    const attempts = await store.workflows.listAttempts(run.runId);
    expect(attempts.filter((a) => a.taskId === 'b').map((a) => a.outcome)).toEqual(['interrupted', 'committed']);
  });

  it('a closed runner leaves the run for the next one, which resumes it at once', async () => {
    const probe = join(scratch, 'close-probe');
    const { store, server, runner } = await setUp([
      { output: [functionCallItem({ callId: 'c1', name: 'wait_for_abort', arguments: JSON.stringify({ path: probe }) })] },
      { output: [submit('c1', { n: 10 })] },
    ]);
    const runId = await start(store, runner, { name: 'handover', maxParallel: 1, tasks: [task('a', 'wait')] });
    await until(() => existsSync(`${probe}.started`), 'the sidecar call to start');
    await runner.close();
    expect((await store.workflows.getRun(runId))?.state).toBe('running');
    const model = createOpenAIResponsesModel({ model: 'scripted', apiKey: 'k', baseURL: server.baseURL, stream: true, maxRetries: 0 });
    const next = new WorkflowRunner({ store, model, openTaskTurn: sidecarTaskTurns(client) });
    cleanups.push(() => next.close());
    next.adopt(runId);
    const run = await next.waitForRun(runId, { signal: AbortSignal.timeout(30_000) });
    expect(run).toMatchObject({ state: 'succeeded', tasks: [{ resultJson: '{"n":10}', attempts: 2, failedAttempts: 0 }] });
  });

  it('two runners share one run: each task is claimed by one of them and committed once', async () => {
    const answer: ScriptStep = (body) => ({ output: [submit('c1', { n: 10 + Number(/task (\d)/.exec(promptText(body))?.[1] ?? 0) })] });
    const { store, server } = await setUp(Array.from({ length: 6 }, () => answer));
    const model = createOpenAIResponsesModel({ model: 'scripted', apiKey: 'k', baseURL: server.baseURL, stream: true, maxRetries: 0 });
    const other = new WorkflowRunner({ store, model, openTaskTurn: sidecarTaskTurns(client), maxRunningTasks: 1 });
    cleanups.push(() => other.close());
    const single = new WorkflowRunner({ store, model, openTaskTurn: sidecarTaskTurns(client), maxRunningTasks: 1 });
    cleanups.push(() => single.close());
    const definition: WorkflowDefinition = { name: 'shared', maxParallel: 2, tasks: Array.from({ length: 6 }, (_, i) => task(`t${i}`, `task ${i}`)) };
    const { runId } = await store.workflows.createRun({ agentId: 'agent-it', definition, maxRunningPerAgent: 10 });
    single.adopt(runId);
    other.adopt(runId);
    const run = await single.waitForRun(runId, { signal: AbortSignal.timeout(30_000) });
    expect(run?.state).toBe('succeeded');
    expect(run?.tasks.map((t) => [t.taskId, t.resultJson, t.attempts])).toEqual(Array.from({ length: 6 }, (_, i) => [`t${i}`, `{"n":${10 + i}}`, 1]));
    const owners = new Set((await store.workflows.listAttempts(runId)).map((a) => a.owner));
    expect(owners).toEqual(new Set([single.owner, other.owner]));
    expect(server.requests).toHaveLength(6);
  });

  it('fails an attempt whose task turn outlives the attempt timeout, and with it the run', async () => {
    const probe = join(scratch, 'timeout-probe');
    const { store, runner, events } = await setUp([{ output: [functionCallItem({ callId: 'c1', name: 'wait_for_abort', arguments: JSON.stringify({ path: probe }) })] }], { attemptTimeoutMs: 1_000 });
    const runId = await start(store, runner, { name: 'slow', maxParallel: 1, tasks: [task('a', 'wait', { maxAttempts: 1 })] });
    const run = await runner.waitForRun(runId, { signal: AbortSignal.timeout(30_000) });
    expect(run).toMatchObject({ state: 'failed', tasks: [{ state: 'failed', error: 'the task turn ran longer than 1000 ms' }] });
    expect(JSON.parse(readFileSync(probe, 'utf8'))).toMatchObject({ aborted: true });
    expect(events.filter((event) => event.type === 'run-finished')).toEqual([{ type: 'run-finished', runId, state: 'failed', error: run?.error }]);
  });

  it('closing with a grace stops claiming but lets a running task turn finish and commit', async () => {
    const probe = join(scratch, 'grace-probe');
    const { store, runner } = await setUp([
      { output: [functionCallItem({ callId: 'c1', name: 'wait_for_abort', arguments: JSON.stringify({ path: probe }) })] },
      { output: [submit('c2', { n: 12 })] },
    ]);
    const runId = await start(store, runner, { name: 'grace', maxParallel: 1, tasks: [task('a', 'wait'), task('b', 'after', { dependsOn: ['a'] })] });
    await until(() => existsSync(`${probe}.started`), 'the sidecar call to start');
    const closed = runner.close({ graceMs: 60_000 });
    writeFileSync(`${probe}.release`, '');
    await closed;
    const run = await store.workflows.getRun(runId);
    // a finished within the grace and committed; b became ready but nobody claimed it: the runner had stopped claiming.
    expect(run?.tasks.map((t) => [t.taskId, t.state, t.attempts])).toEqual([
      ['a', 'committed', 1],
      ['b', 'pending', 0],
    ]);
    expect(existsSync(probe)).toBe(false);
    expect((await store.workflows.listAttempts(runId)).map((a) => [a.taskId, a.outcome])).toEqual([['a', 'committed']]);
  });
});

describe('the workflow runner: observers and a store that fails for a moment (issue 23 items 3 and 4)', () => {
  const recording = () => {
    const lines: Array<{ level: string; msg: string } & Record<string, unknown>> = [];
    const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, ...fields });
    return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } satisfies Logger };
  };

  it('an observer that throws breaks nothing: the task runs, commits, the throw is logged and close() settles', async () => {
    const { lines, logger } = recording();
    const observe = (event: WorkflowRunnerEvent) => {
      if (event.type === 'task-started') throw new Error('observer bug');
    };
    const { store, runner } = await setUp([{ output: [submit('c1', { n: 11 })] }], { observe, logger });
    const runId = await start(store, runner, { name: 'observed', maxParallel: 1, tasks: [task('a', 'the task')] });
    const run = await runner.waitForRun(runId, { signal: AbortSignal.timeout(15_000) });
    expect(run?.tasks.map((t) => [t.taskId, t.state, t.attempts])).toEqual([['a', 'committed', 1]]);
    expect(lines.find((line) => line.msg === 'a workflow event observer threw; the runner goes on')).toMatchObject({ level: 'error', event: 'task-started', error: 'observer bug' });
    await runner.close();
  });

  it("retries a finished turn's commit when the store fails for a moment, instead of losing the result and its model cost", async () => {
    let failures = 2;
    const wrapStore = (real: ControlPlaneStore): ControlPlaneStore => ({
      ...real,
      close: () => real.close(),
      workflows: {
        ...real.workflows,
        commitResult: async (input) => {
          if (failures-- > 0) throw new ControlPlaneError('unavailable', 'the database is restarting');
          return real.workflows.commitResult(input);
        },
      },
    });
    const { store, server, runner } = await setUp([{ output: [submit('c1', { n: 11 })] }], { wrapStore });
    const runId = await start(store, runner, { name: 'retried', maxParallel: 1, tasks: [task('a', 'the task')] });
    const run = await runner.waitForRun(runId, { signal: AbortSignal.timeout(15_000) });
    expect(run).toMatchObject({ state: 'succeeded', tasks: [{ taskId: 'a', state: 'committed', resultJson: '{"n":11}', attempts: 1 }] });
    // One model call: the finished turn was committed, not run again.
    expect(server.requests).toHaveLength(1);
  });
});
