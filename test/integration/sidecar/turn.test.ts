import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionMode, type ToolResult, type ToolSidecarServiceClient } from '../../../src/gen/toolruntime/v1/sidecar.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { createClient, openRequest, openTurn, textOf } from './turn-driver.js';

// One sidecar child for the whole file: the fixture catalogs, a short abort grace, small limits.
let sidecar: StartedSidecar;
let client: ToolSidecarServiceClient;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sidecar-turn-'));
  sidecar = await startSidecar({
    entry: 'test/fixtures/fixture-sidecar.ts',
    args: [
      '--workspace', dir,
      '--state-dir', join(dir, 'state'),
      '--abort-grace-ms', '200',
      '--max-concurrent-calls', '60',
      '--max-result-chars', '1000',
      '--log-level', 'warn',
    ],
  });
  client = createClient(sidecar.address);
});

afterAll(async () => {
  client?.close();
  const code = await sidecar?.stop();
  expect(code).toBe(0);
  rmSync(dir, { recursive: true, force: true });
});

const details = (result: ToolResult) => JSON.parse(result.detailsJson) as { start: number; end: number };

/** Polls `check` every 10 ms; fails naming `what` when it is still false after `timeoutMs`. */
async function waitUntil(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function waitForFile(path: string, timeoutMs = 5_000): Promise<string> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (existsSync(path)) return readFileSync(path, 'utf8');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${path} did not appear within ${timeoutMs} ms`);
}

describe('Turn over a real sidecar child', () => {
  it('answers open with the tool set, namespaces and modes included', async () => {
    const turn = await openTurn(client, 'agent-set');
    const byName = new Map(turn.toolSet.tools.map((tool) => [tool.name, tool]));
    expect(byName.get('sleep')?.executionMode).toBe(ExecutionMode.EXECUTION_MODE_PARALLEL);
    expect(byName.get('sleep_sequential')?.executionMode).toBe(ExecutionMode.EXECUTION_MODE_SEQUENTIAL);
    expect(byName.get('todo_write')?.executionMode).toBe(ExecutionMode.EXECUTION_MODE_SEQUENTIAL);
    expect(byName.get('deferred_lookup')).toMatchObject({ namespace: 'fixture_ns', deferLoading: true });
    expect(byName.get('lookup')?.namespaceDescription).toContain('Fixture tools');
    expect(JSON.parse(byName.get('sleep')!.parametersJson)).toMatchObject({ type: 'object', properties: { ms: { type: 'integer' } } });
    const namespaced = await turn.call('n1', 'lookup', { key: 'k' }, { namespace: 'fixture_ns' });
    expect(textOf(namespaced)).toBe('value of k');
    expect((await turn.end()).code).toBe(grpc.status.OK);
  });

  it('keeps an agent todo list across turns and emits todo.updated', async () => {
    const first = await openTurn(client, 'agent-todo');
    const todos = [
      { id: 'a', content: 'plan', status: 'completed' },
      { id: 'b', content: 'build', status: 'in_progress' },
      { id: 'c', content: 'ship', status: 'pending' },
    ];
    const written = await first.call('w1', 'todo_write', { todos });
    expect(written.error).toBeUndefined();
    expect(written.completedLabel).toBe('Updated the todo list: 1/3 done');
    const events = first.record('w1').events;
    expect(events[0]).toEqual({ $case: 'activityStarted', value: { label: 'Updating the todo list (3 items)' } });
    expect(events[1]?.$case).toBe('presentation');
    if (events[1]?.$case === 'presentation') {
      expect(events[1].value.kind).toBe('todo.updated');
      expect(JSON.parse(events[1].value.payloadJson)).toEqual({ todos });
    }
    const twoActive = await first.call('w2', 'todo_write', { todos: todos.map((item) => ({ ...item, status: 'in_progress' })) });
    expect(twoActive.error?.code).toBe('invalid_arguments');
    expect(textOf(twoActive)).toContain('at most one todo may be in_progress');
    await first.end();

    const second = await openTurn(client, 'agent-todo');
    const read = await second.call('r1', 'todo_read', {});
    expect(textOf(read)).toContain('1/3 done');
    expect(textOf(read)).toContain('[~] b: build');
    const other = await openTurn(client, 'agent-other');
    expect(textOf(await other.call('r2', 'todo_read', {}))).toBe('The todo list is empty.');
    await Promise.all([second.end(), other.end()]);
  });

  it('runs 50 parallel calls at the same time', async () => {
    const turn = await openTurn(client, 'agent-parallel');
    // Calls that only end when cancelled: all 50 started (activity-started) while none had ended
    // proves they ran at once, on a machine of any speed (a sleep of a few hundred ms did not).
    const ids = Array.from({ length: 50 }, (_, index) => `p${index}`);
    const results = Promise.all(ids.map((id) => turn.call(id, 'sleep', { ms: 120_000 })));
    await waitUntil(() => ids.every((id) => turn.record(id).events.length > 0), 'all 50 parallel calls to start');
    expect(turn.responses.filter((response) => response.event?.$case === 'result' && ids.includes(response.callId))).toEqual([]);
    for (const id of ids) turn.cancel(id, 'the test saw them all running');
    expect((await results).map((result) => result.error?.code)).toEqual(ids.map(() => 'aborted'));
    await turn.end();
  });

  it('makes a sequential call wait for earlier calls and hold back later ones', async () => {
    const turn = await openTurn(client, 'agent-sequential');
    const [before, sequential, after] = await Promise.all([
      turn.call('s1', 'sleep', { ms: 150 }),
      turn.call('s2', 'sleep_sequential', { ms: 50 }),
      turn.call('s3', 'sleep', { ms: 1 }),
    ]);
    expect(details(sequential!).start).toBeGreaterThanOrEqual(details(before!).end);
    expect(details(after!).start).toBeGreaterThanOrEqual(details(sequential!).end);
    await turn.end();
  });

  it('streams many presentation events in order, then the result', async () => {
    const turn = await openTurn(client, 'agent-emit');
    const result = await turn.call('e1', 'emit', { count: 500 });
    expect(textOf(result)).toBe('emitted 500');
    const events = turn.record('e1').events;
    expect(events[0]?.$case).toBe('activityStarted');
    const indices = events.filter((event) => event?.$case === 'presentation' && event.value.kind === 'fixture.tick')
      .map((event) => (event?.$case === 'presentation' ? (JSON.parse(event.value.payloadJson) as { index: number }).index : -1));
    expect(indices).toEqual(Array.from({ length: 500 }, (_, index) => index));
    expect(events.at(-2)).toMatchObject({ $case: 'presentation', value: { kind: 'fixture.done' } });
    expect(events.at(-1)?.$case).toBe('result');
    await turn.end();
  });

  it('turns unknown tools, bad arguments, throws and duplicate ids into error results', async () => {
    const turn = await openTurn(client, 'agent-errors');
    const unknown = await turn.call('u1', 'no_such_tool', {});
    expect(unknown.error?.code).toBe('unknown_tool');
    expect(textOf(unknown)).toContain('no_such_tool');
    expect(turn.record('u1').events.map((event) => event?.$case)).toEqual(['result']);

    const invalid = await turn.call('i1', 'sleep', { ms: 'soon' });
    expect(invalid.error?.code).toBe('invalid_arguments');
    expect(textOf(invalid)).toContain('ms');

    const repaired = await turn.call('i2', 'echo', '```json\n{"x": 1}\n```');
    expect(repaired.error).toBeUndefined();
    expect(repaired.repairs.length).toBeGreaterThan(0);

    const thrown = await turn.call('t1', 'throw', { message: 'the disk is on fire' });
    expect(thrown.error?.code).toBe('tool_failed');
    expect(textOf(thrown)).toContain('the disk is on fire');

    const first = turn.call('d1', 'sleep', { ms: 100 });
    await new Promise((resolve) => setTimeout(resolve, 10));
    const duplicate = await turn.call('d1', 'echo', {});
    expect(duplicate.error?.code).toBe('duplicate_call_id');
    void first;
    const results = () => turn.responses.filter((response) => response.callId === 'd1' && response.event?.$case === 'result');
    await waitUntil(() => results().length >= 2, 'both results of the duplicated call id d1');
    expect(results().filter((response) => response.event?.$case === 'result' && response.event.value.error === undefined)).toHaveLength(1);

    const big = await turn.call('b1', 'echo', { text: 'x'.repeat(5_000) });
    expect(textOf(big).length).toBeLessThanOrEqual(1000);
    expect(textOf(big)).toMatch(/characters cut/);

    const ended = await turn.call('x1', 'terminate', { text: 'bye' });
    expect(ended.terminateTurn).toBe(true);
    expect((await turn.end()).code).toBe(grpc.status.OK);
  });

  it('gives too_many_calls beyond the per-turn limit, without breaking the stream', async () => {
    const turn = await openTurn(client, 'agent-many');
    const running = Array.from({ length: 60 }, (_, index) => turn.call(`m${index}`, 'sleep', { ms: 300 }));
    const refused = await turn.call('m60', 'noop', {});
    expect(refused.error?.code).toBe('too_many_calls');
    await Promise.all(running);
    expect((await turn.call('m61', 'noop', {})).error).toBeUndefined();
    await turn.end();
  });

  it('aborts a cancelled call and a call past its deadline', async () => {
    const turn = await openTurn(client, 'agent-cancel');
    const probe = join(dir, 'cancel-probe.json');
    const cancelled = turn.call('c1', 'abort_probe', { path: probe });
    await waitUntil(() => turn.record('c1').events.length > 0, 'the first event of call c1 (abort_probe started)');
    turn.cancel('c1', 'the user changed their mind');
    const result = await cancelled;
    expect(result.error?.code).toBe('aborted');
    expect(result.error?.message).toContain('the user changed their mind');
    expect(JSON.parse(await waitForFile(probe))).toMatchObject({ aborted: true });

    const late = await turn.call('c2', 'sleep', { ms: 20_000 }, { deadlineMs: 50 });
    expect(late.error?.code).toBe('timeout');
    expect(textOf(late)).toContain('deadline');
    await turn.end();
  });

  it('sends the result of a tool that ignores its abort after the grace, and the stream stays healthy', async () => {
    const turn = await openTurn(client, 'agent-ignore');
    const result = await turn.call('g1', 'ignore_abort', { ms: 3_000 }, { deadlineMs: 50 });
    expect(result.error?.code).toBe('timeout');
    const after = await turn.call('g2', 'noop', {});
    expect(textOf(after)).toBe('ok');
    await turn.end();
  });

  it('lets running calls finish on half-close, then ends the stream', async () => {
    const turn = await openTurn(client, 'agent-halfclose');
    const running = turn.call('h1', 'sleep', { ms: 150 });
    const status = await turn.end();
    expect(status.code).toBe(grpc.status.OK);
    expect((await running).error).toBeUndefined();
  });

  it('aborts running calls when the client cancels the stream', async () => {
    const turn = await openTurn(client, 'agent-vanish');
    const probe = join(dir, 'vanish-probe.json');
    void turn.call('v1', 'abort_probe', { path: probe });
    await waitUntil(() => turn.record('v1').events.length > 0, 'the first event of call v1 (abort_probe started)');
    turn.stream.on('error', () => {});
    turn.stream.cancel();
    expect(JSON.parse(await waitForFile(probe))).toMatchObject({ aborted: true });
  });

  it('refuses a stream whose first request is not open, and a second open', async () => {
    const stream = client.turn();
    stream.on('data', () => {});
    stream.on('error', () => {});
    const status = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
    stream.write({ request: { $case: 'call', value: { callId: 'x', name: 'noop', namespace: '', argumentsJson: '{}', deadlineMs: 0, traceparent: '', tracestate: '' } } });
    const first = await status;
    expect(first.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(first.details).toContain('must be `open`');

    const turn = await openTurn(client, 'agent-twice');
    turn.stream.on('error', () => {});
    turn.stream.write(openRequest('agent-twice'));
    const second = await turn.status;
    expect(second.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(second.details).toContain('already open');
  });
});
