import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import type { ApprovalDecision, ApprovalRequestEvent, ApproveCallback, CallEvent, CallHandle } from '../../../controller/sidecar-client/sidecar-types.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const workspace = mkdtempSync(join(tmpdir(), 'approvals-'));
const fixtureDir = mkdtempSync(join(tmpdir(), 'approvals-fixture-'));
let real: StartedSidecar;
let fixture: StartedSidecar;
let realClient: SidecarClient;
let fixtureClient: SidecarClient;
let turns = 0;

beforeAll(async () => {
  [real, fixture] = await Promise.all([
    // Debug lines: a test waits for the sidecar's own word that it saw a turn cancelled.
    startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(fixtureDir, 'real-state'), '--log-level', 'debug'] }),
    startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--listen', '127.0.0.1:0', '--workspace', fixtureDir, '--state-dir', join(fixtureDir, 'state')] }),
  ]);
  realClient = createSidecarClient({ address: real.address });
  fixtureClient = createSidecarClient({ address: fixture.address });
});
afterAll(async () => {
  realClient?.close();
  fixtureClient?.close();
  await Promise.all([real?.stop(), fixture?.stop()]);
  rmSync(workspace, { recursive: true, force: true });
  rmSync(fixtureDir, { recursive: true, force: true });
});

const signal = () => AbortSignal.timeout(20_000);

/** An approver the test decides for: each request waits until `decide` (or its signal). */
function manualApprover() {
  const requests: ApprovalRequestEvent[] = [];
  const withdrawn: string[] = [];
  const pending = new Map<string, (decision: ApprovalDecision) => void>();
  const approve: ApproveCallback = (request, requestSignal) =>
    new Promise((resolve) => {
      requests.push(request);
      pending.set(request.callId, resolve);
      requestSignal.addEventListener('abort', () => {
        withdrawn.push(request.callId);
        resolve({ approved: false, reason: 'withdrawn' });
      });
    });
  const decide = (callId: string, decision: ApprovalDecision) => pending.get(callId)!(decision);
  return { approve, requests, withdrawn, decide };
}

const until = async (check: () => boolean) => {
  const deadline = Date.now() + 15_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met within 15 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

async function eventsOf(handle: CallHandle): Promise<CallEvent[]> {
  const events: CallEvent[] = [];
  for await (const event of handle) events.push(event);
  return events;
}

const write = (callId: string, path: string, content = 'written') => ({ callId, name: 'write_file', argumentsJson: JSON.stringify({ path, content }) });

describe('approvals against the real sidecar', () => {
  it('asks for a destructive call with its label and validated parameters; approved, it runs, and the wait is not running time', async () => {
    const approve: ApproveCallback = async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      return { approved: true };
    };
    const asked: ApprovalRequestEvent[] = [];
    const turn = await realClient.openTurn(
      { agentId: 'agent-a', turnId: `t${++turns}`, approvalPolicy: { mode: 'destructive' } },
      { signal: signal(), approve: (request, requestSignal) => (asked.push(request), approve(request, requestSignal)) },
    );
    // The model's arguments are repaired and validated first: the approver sees the clean value.
    const result = await turn.call({ callId: 'w1', name: 'write_file', argumentsJson: '```json\n{"path":"approved.txt","content":"yes"}\n```' }).result;
    expect(result.error).toBeUndefined();
    expect(readFileSync(join(workspace, 'approved.txt'), 'utf8')).toBe('yes');
    expect(asked).toEqual([
      {
        callId: 'w1',
        requestId: expect.any(String),
        kind: 'approval',
        approval: { toolName: 'write_file', label: expect.stringContaining('approved.txt'), parameters: { path: 'approved.txt', content: 'yes' }, readOnly: false, destructive: true },
      },
    ]);
    expect(result.durationMs).toBeLessThan(2_000);
    // Read-only calls are not asked under the destructive policy.
    expect((await turn.call({ callId: 'r1', name: 'read_file', argumentsJson: '{"path":"approved.txt"}' }).result).error).toBeUndefined();
    expect(asked).toHaveLength(1);
    await turn.close();
  });

  it('denied, the tool never runs: one result with code denied and a message for the model, no activity', async () => {
    const turn = await realClient.openTurn(
      { agentId: 'agent-a', turnId: `t${++turns}`, approvalPolicy: { mode: 'destructive' } },
      { signal: signal(), approve: async () => ({ approved: false, reason: 'the user keeps that folder' }) },
    );
    const handle = turn.call({ callId: 'r1', name: 'run_command', argumentsJson: JSON.stringify({ command: 'touch ran-anyway.txt' }) });
    const events = await eventsOf(handle);
    expect(events.map((event) => event.type)).toEqual(['result']);
    const result = await handle.result;
    expect(result.error?.code).toBe('denied');
    expect(result.error?.message).toContain('run_command');
    expect(result.error?.message).toContain('The reason given: the user keeps that folder');
    expect(result.error?.message).toContain('Do not retry the same call unchanged');
    expect(existsSync(join(workspace, 'ran-anyway.txt'))).toBe(false);
    await turn.close();
  });

  it('a policy without anyone to approve denies, rather than hanging', async () => {
    const turn = await realClient.openTurn({ agentId: 'agent-a', turnId: `t${++turns}`, approvalPolicy: { mode: 'destructive' } }, { signal: signal() });
    const result = await turn.call(write('w1', 'nobody.txt')).result;
    expect(result.error?.code).toBe('denied');
    expect(result.error?.message).toContain('nobody can approve calls on this turn');
    expect(existsSync(join(workspace, 'nobody.txt'))).toBe(false);
    await turn.close();
  });

  it('a call cancelled while it waits gets aborted, and the approver is told to stop asking', async () => {
    const manual = manualApprover();
    const turn = await realClient.openTurn({ agentId: 'agent-a', turnId: `t${++turns}`, approvalPolicy: { mode: 'destructive' } }, { signal: signal(), approve: manual.approve });
    const cancel = new AbortController();
    const handle = turn.call(write('w1', 'cancelled.txt'), { signal: cancel.signal });
    await until(() => manual.requests.length === 1);
    cancel.abort();
    expect((await handle.result).error?.code).toBe('aborted');
    await until(() => manual.withdrawn.includes('w1'));
    expect(existsSync(join(workspace, 'cancelled.txt'))).toBe(false);
    await turn.close();
  });

  it('a deadline passed while it waits gives timeout, and nothing runs', async () => {
    const manual = manualApprover();
    const turn = await realClient.openTurn({ agentId: 'agent-a', turnId: `t${++turns}`, approvalPolicy: { mode: 'destructive' } }, { signal: signal(), approve: manual.approve });
    const result = await turn.call({ ...write('w1', 'late.txt'), deadlineMs: 400 }).result;
    expect(result.error?.code).toBe('timeout');
    await until(() => manual.withdrawn.includes('w1'));
    // A decision that comes after the deadline changes nothing.
    manual.decide('w1', { approved: true });
    expect(existsSync(join(workspace, 'late.txt'))).toBe(false);
    await turn.close();
  });

  it('the stream ending while a call waits aborts the call, withdraws the question, and runs nothing', async () => {
    const manual = manualApprover();
    const turn = await realClient.openTurn({ agentId: 'agent-a', turnId: `t${++turns}`, approvalPolicy: { mode: 'destructive' } }, { signal: signal(), approve: manual.approve });
    const handle = turn.call(write('w1', 'stream-ended.txt'));
    await until(() => manual.requests.length === 1);
    const cancellations = () => real.stderr().split('\n').filter((line) => line.includes('"turn cancelled by the client"')).length;
    const cancelledBefore = cancellations();
    turn.abort();
    expect((await handle.result).error?.code).toBe('aborted');
    await until(() => manual.withdrawn.includes('w1'));
    // The sidecar ended its side too: it logs the cancellation, then ends the turn and its calls in
    // the same tick. From then on no approval could make the tool run.
    await until(() => cancellations() > cancelledBefore);
    manual.decide('w1', { approved: true });
    expect(existsSync(join(workspace, 'stream-ended.txt'))).toBe(false);
  });

  it('a client that half-closes while a call waits cannot answer any more: the call is denied at once, not at its deadline', async () => {
    const manual = manualApprover();
    const turn = await realClient.openTurn({ agentId: 'agent-a', turnId: `t${++turns}`, approvalPolicy: { mode: 'destructive' } }, { signal: signal(), approve: manual.approve });
    const handle = turn.call(write('w1', 'half-closed.txt'));
    await until(() => manual.requests.length === 1);
    await turn.close({ timeoutMs: 15_000 });
    const result = await handle.result;
    expect(result.error?.code).toBe('denied');
    expect(result.error?.message).toContain('closed its side of the turn stream');
    expect(turn.failure).toBeUndefined();
    expect(existsSync(join(workspace, 'half-closed.txt'))).toBe(false);
  });

  it('the sequential rule still holds: a destructive sequential call waiting for approval holds back the calls after it', async () => {
    const manual = manualApprover();
    const turn = await realClient.openTurn({ agentId: 'agent-a', turnId: `t${++turns}`, approvalPolicy: { mode: 'destructive' } }, { signal: signal(), approve: manual.approve });
    const order: string[] = [];
    const writeCall = turn.call(write('w1', 'ordered.txt', 'first'));
    await until(() => manual.requests.length === 1);
    const readCall = turn.call({ callId: 'r1', name: 'read_file', argumentsJson: '{"path":"ordered.txt"}' });
    void writeCall.result.then(() => order.push('write'));
    void readCall.result.then(() => order.push('read'));
    const readSeen: string[] = [];
    const readDone = (async () => {
      for await (const event of readCall) readSeen.push(event.type);
    })();
    // A call the sidecar refuses at once (no such tool), sent after the read on the same stream: its
    // result proves the sidecar has taken the read in, and had the read started, its activity-started
    // would have come first.
    const probe = await turn.call({ callId: 'probe', name: 'no_such_tool', argumentsJson: '{}' }).result;
    expect(probe.error?.code).toBe('unknown_tool');
    expect(order).toEqual([]);
    expect(readSeen).toEqual([]);
    manual.decide('w1', { approved: true });
    const read = await readCall.result;
    expect(order).toEqual(['write', 'read']);
    await readDone;
    expect(readSeen).toEqual(['activity-started', 'result']);
    expect(read.content.map((part) => (part.type === 'text' ? part.text : '')).join('')).toContain('first');
    await turn.close();
  });

  it('the other policies: not_read_only asks todo_write, listed asks only the named tools', async () => {
    const asked: string[] = [];
    const approve: ApproveCallback = async (request) => (asked.push(request.approval.toolName), { approved: true });
    const notReadOnly = await realClient.openTurn({ agentId: 'agent-a', turnId: `t${++turns}`, approvalPolicy: { mode: 'not_read_only' } }, { signal: signal(), approve });
    await notReadOnly.call({ callId: 'a', name: 'todo_write', argumentsJson: '{"todos":[{"id":"1","content":"x","status":"pending"}]}' }).result;
    await notReadOnly.call({ callId: 'b', name: 'todo_read', argumentsJson: '{}' }).result;
    await notReadOnly.close();
    expect(asked).toEqual(['todo_write']);
    const listed = await realClient.openTurn({ agentId: 'agent-a', turnId: `t${++turns}`, approvalPolicy: { mode: 'listed', toolNames: ['read_file'] } }, { signal: signal(), approve });
    await listed.call({ callId: 'a', name: 'read_file', argumentsJson: '{"path":"approved.txt"}' }).result;
    await listed.call(write('b', 'listed.txt')).result;
    await listed.close();
    expect(asked).toEqual(['todo_write', 'read_file']);
    expect(existsSync(join(workspace, 'listed.txt'))).toBe(true);
  });

  it('a client without a policy sees today\'s behaviour: nothing is asked and destructive calls run', async () => {
    const asked: string[] = [];
    const turn = await realClient.openTurn(
      { agentId: 'agent-a', turnId: `t${++turns}` },
      { signal: signal(), approve: async (request) => (asked.push(request.callId), { approved: false }), onClientRequest: async () => { throw new Error('never asked'); } },
    );
    const handle = turn.call({ callId: 'c1', name: 'run_command', argumentsJson: JSON.stringify({ command: 'echo hi > no-policy.txt' }) });
    const events = await eventsOf(handle);
    expect(events[0]?.type).toBe('activity-started');
    expect((await handle.result).error).toBeUndefined();
    expect(readFileSync(join(workspace, 'no-policy.txt'), 'utf8')).toBe('hi\n');
    expect(asked).toEqual([]);
    const tools = turn.tools.filter((tool) => tool.destructive).map((tool) => tool.name);
    expect(tools).toEqual(['run_command', 'write_file', 'edit_file', 'apply_patch', 'start_command', 'write_session']);
    await turn.close();
  });
});

describe('approvals and parallel calls (fixture sidecar)', () => {
  it('parallel calls that need no approval finish while a destructive parallel one waits', async () => {
    const manual = manualApprover();
    const turn = await fixtureClient.openTurn({ agentId: 'agent-p', turnId: `t${++turns}`, approvalPolicy: { mode: 'destructive' } }, { signal: signal(), approve: manual.approve });
    const marker = join(fixtureDir, 'marker.txt');
    const waiting = turn.call({ callId: 'm1', name: 'write_marker', argumentsJson: JSON.stringify({ path: marker, text: 'approved' }) });
    await until(() => manual.requests.length === 1);
    const others = [
      turn.call({ callId: 'e1', name: 'echo', argumentsJson: '{"n":1}' }),
      turn.call({ callId: 's1', name: 'sleep', argumentsJson: '{"ms":50}' }),
      turn.call({ callId: 'l1', name: 'lookup', namespace: 'fixture_ns', argumentsJson: '{"key":"k"}' }),
    ];
    const results = await Promise.all(others.map((handle) => handle.result));
    expect(results.map((result) => result.error)).toEqual([undefined, undefined, undefined]);
    expect(existsSync(marker)).toBe(false);
    manual.decide('m1', { approved: true });
    expect((await waiting.result).error).toBeUndefined();
    expect(readFileSync(marker, 'utf8')).toBe('approved');
    await turn.close();
  });
});
