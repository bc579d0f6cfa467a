import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ControlPlaneStore } from '../../../../../../controller/control-plane/domain/control-plane-store.js';
import { openTaskJournal } from '../../../../../../controller/control-plane/domain/turns/task-journal.js';
import { openSqliteStore } from '../../../../../../controller/control-plane/store/sqlite/open-sqlite-store.js';

let dir: string | undefined;
let store: ControlPlaneStore | undefined;
afterEach(async () => {
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('openTaskJournal', () => {
  it('an attempt taken over from a dead runner continues its journal; an attempt after a failure starts its own', async () => {
    dir = mkdtempSync(join(tmpdir(), 'task-journal-'));
    store = await openSqliteStore({ dataDir: dir });
    const definition = { name: 'w', maxParallel: 1, tasks: [{ id: 't', prompt: 'p', resultSchema: { type: 'object' }, dependsOn: [], maxAttempts: 3 }] };
    await store.workflows.createRun({ agentId: 'agent-1', definition, maxRunningPerAgent: 5 });
    const first = (await store.workflows.claimTask({ owner: 'host:1:dead', leaseMs: 60_000 }))!;
    const journal = await openTaskJournal(store, first, 'agent-1');
    expect(journal.journalId).toBe(`task:${first.runId}:t:1`);
    await journal.append({ kind: 'input', items: [] });

    // Its runner is gone: attempt 2 is logged over an interrupted attempt 1, and finds its journal.
    const second = (await store.workflows.claimTask({ owner: 'host:2:alive', leaseMs: 60_000, takeOverFrom: ['host:1:dead'] }))!;
    expect(second.attempt).toBe(2);
    const resumed = await openTaskJournal(store, second, 'agent-1');
    expect(resumed.journalId).toBe(`task:${first.runId}:t:1`);
    expect(resumed.records).toEqual([{ kind: 'input', items: [] }]);

    // Attempt 2 fails: attempt 3 is a retry, a fresh turn with a journal of its own.
    await store.workflows.endAttempt({ runId: second.runId, taskId: 't', attempt: 2, outcome: 'failed', error: 'no' });
    const third = (await store.workflows.claimTask({ owner: 'host:2:alive', leaseMs: 60_000 }))!;
    expect(third.attempt).toBe(3);
    const fresh = await openTaskJournal(store, third, 'agent-1');
    expect(fresh.journalId).toBe(`task:${first.runId}:t:3`);
    expect(fresh.records).toEqual([]);
  });
});
