import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createApprovalOperations } from '../../../../controller/control-plane/grpc/approval-operations.js';
import { createStoredApprover } from '../../../../controller/control-plane/domain/approvals/stored-approver.js';
import { isControlPlaneError } from '../../../../controller/control-plane/domain/control-plane-error.js';
import type { ControlPlaneStore } from '../../../../controller/control-plane/domain/control-plane-store.js';
import { openSqliteStore } from '../../../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import type { ApprovalRequestEvent } from '../../../../controller/sidecar-client/sidecar-types.js';
import { ApprovalState } from '../../../../src/gen/toolruntime/v1/control_plane.js';

const dirs: string[] = [];
const stores: ControlPlaneStore[] = [];
afterAll(async () => {
  for (const store of stores) await store.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A real SQLite store in a temp folder, on a clock the test moves. */
async function open() {
  const dataDir = mkdtempSync(join(tmpdir(), 'approvals-store-'));
  dirs.push(dataDir);
  let time = Date.parse('2026-11-30T21:00:00.000Z');
  const clock = { now: () => new Date(time), advance: (ms: number) => (time += ms) };
  const store = await openSqliteStore({ dataDir, now: clock.now });
  stores.push(store);
  return { store, clock, dataDir };
}

const request = (callId: string): ApprovalRequestEvent => ({
  callId,
  requestId: `r-${callId}`,
  kind: 'approval',
  approval: { toolName: 'write_file', label: 'Writing notes.md', parameters: { path: 'notes.md', content: 'x' }, readOnly: false, destructive: true },
});

const until = async (check: () => Promise<boolean>) => {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe('stored approvals', () => {
  it('a waiting call is stored pending, listed, approved once; a second decision is refused', async () => {
    const { store } = await open();
    const approve = createStoredApprover({ approvals: store.approvals, agentId: 'agent-1', turnId: 'turn-1', expiresAfterMs: 60_000, pollMs: 10 });
    const decision = approve(request('c1'), new AbortController().signal);
    await until(async () => (await store.approvals.list({ pendingOnly: true })).length === 1);
    const operations = createApprovalOperations(store.approvals);
    const [pending] = (await operations.list({ agentId: 'agent-1', pendingOnly: true })).approvals;
    expect(pending).toMatchObject({ agentId: 'agent-1', turnId: 'turn-1', callId: 'c1', toolName: 'write_file', parametersJson: '{"path":"notes.md","content":"x"}', destructive: true, state: ApprovalState.APPROVAL_STATE_PENDING });
    expect((await operations.list({ agentId: 'agent-2', pendingOnly: false })).approvals).toEqual([]);
    const decided = await operations.decide({ approvalId: pending!.approvalId, approved: true, reason: 'go ahead' });
    expect(decided.approval).toMatchObject({ state: ApprovalState.APPROVAL_STATE_APPROVED, reason: 'go ahead' });
    expect(await decision).toEqual({ approved: true, reason: 'go ahead' });
    const again = await operations.decide({ approvalId: pending!.approvalId, approved: false, reason: '' }).catch((error: unknown) => error);
    expect(isControlPlaneError(again, 'invalid_request')).toBe(true);
    expect((again as Error).message).toContain('is no longer pending: it is approved');
    const unknown = await operations.decide({ approvalId: 'appr-nope', approved: true, reason: '' }).catch((error: unknown) => error);
    expect(isControlPlaneError(unknown, 'not_found')).toBe(true);
    expect((await operations.list({ agentId: '', pendingOnly: true })).approvals).toEqual([]);
  });

  it('denied by an operator: the call is denied with the reason', async () => {
    const { store } = await open();
    const approve = createStoredApprover({ approvals: store.approvals, agentId: 'agent-1', turnId: 'turn-1', expiresAfterMs: 60_000, pollMs: 10 });
    const decision = approve(request('c1'), new AbortController().signal);
    await until(async () => (await store.approvals.list({ pendingOnly: true })).length === 1);
    const [pending] = await store.approvals.list({ pendingOnly: true });
    await store.approvals.decide(pending!.approvalId, { approved: false, reason: 'not on a Friday' });
    expect(await decision).toEqual({ approved: false, reason: 'an operator denied it: not on a Friday' });
  });

  it('nobody deciding in time expires it as denied, for the waiting call and for every reader', async () => {
    const { store, clock } = await open();
    const approve = createStoredApprover({ approvals: store.approvals, agentId: 'agent-1', turnId: 'turn-1', expiresAfterMs: 30_000, pollMs: 10, now: clock.now });
    const decision = approve(request('c1'), new AbortController().signal);
    await until(async () => (await store.approvals.list({ pendingOnly: true })).length === 1);
    const [pending] = await store.approvals.list({ pendingOnly: true });
    clock.advance(30_001);
    expect(await decision).toEqual({ approved: false, reason: 'nobody decided within 30 s: nobody decided before it expired' });
    expect(await store.approvals.get(pending!.approvalId)).toMatchObject({ status: 'expired' });
    const late = await store.approvals.decide(pending!.approvalId, { approved: true }).catch((error: unknown) => error);
    expect((late as Error).message).toContain('it is expired');
  });

  it('a call that ends while it waits withdraws its approval', async () => {
    const { store } = await open();
    const approve = createStoredApprover({ approvals: store.approvals, agentId: 'agent-1', turnId: 'turn-1', expiresAfterMs: 60_000, pollMs: 10 });
    const call = new AbortController();
    const decision = approve(request('c1'), call.signal);
    await until(async () => (await store.approvals.list({ pendingOnly: true })).length === 1);
    call.abort();
    expect(await decision).toEqual({ approved: false, reason: 'the call ended before anyone decided' });
    const [record] = await store.approvals.list({});
    expect(record).toMatchObject({ status: 'expired', reason: 'the call ended before anyone decided' });
  });

  it('decisions survive a reopen of the store (another process decides)', async () => {
    const { store, dataDir } = await open();
    const created = await store.approvals.create({ agentId: 'a', turnId: 't', callId: 'c', toolName: 'run_command', namespace: '', label: 'Running `ls`', parametersJson: '{}', readOnly: false, destructive: true, expiresAt: new Date(Date.parse('2026-11-30T22:00:00.000Z')) });
    const other = await openSqliteStore({ dataDir, now: () => new Date('2026-11-30T21:00:01.000Z') });
    stores.push(other);
    await other.approvals.decide(created.approvalId, { approved: true });
    expect(await store.approvals.get(created.approvalId)).toMatchObject({ status: 'approved' });
  });
});
