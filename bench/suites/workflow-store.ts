// The SQLite store's claim and commit paths against the store as it was before it was written once
// against Kysely (bench/reference/), in the same run: both stores drive the same 200-task workflow
// (20 chains of 10, max_parallel 16) in lockstep, claim for claim and commit for commit, so that the
// machine's noise falls on both alike.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteStore, STORE_FILE_NAME } from '../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import type { WorkflowDefinition, WorkflowStore } from '../../controller/control-plane/domain/workflows/workflow-store.js';
import { quantile, type BenchRow } from '../bench-row.js';
import { createSqliteWorkflowStore as createStoreBeforeKysely } from '../reference/sqlite-workflow-store-before-kysely.js';

const TASKS = 200;
const CHAINS = 20;
const RUNS = 8;

const definition: WorkflowDefinition = {
  name: 'store-bench',
  maxParallel: 16,
  tasks: Array.from({ length: TASKS }, (_, index) => ({
    id: `t${index}`,
    prompt: `part ${index}`,
    resultSchema: { type: 'object' },
    dependsOn: index >= CHAINS ? [`t${index - CHAINS}`] : [],
    maxAttempts: 2,
  })),
};

interface Times {
  claim: number[];
  commit: number[];
}

async function timed<T>(into: number[], work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await work();
  into.push((performance.now() - started) * 1000);
  return result;
}

/** One claim then one commit on `store`; false once its run has nothing left to claim. */
async function step(store: WorkflowStore, times: Times): Promise<boolean> {
  const claim = await timed(times.claim, () => store.claimTask({ owner: 'bench-runner', leaseMs: 60_000 }));
  if (!claim) return false;
  await timed(times.commit, () => store.commitResult({ runId: claim.runId, taskId: claim.taskId, attempt: claim.attempt, resultJson: '{"ok":true}' }));
  return true;
}

/** The rows: claimTask and commitResult p50 of the store against the store before Kysely. */
export async function workflowStoreRows(): Promise<BenchRow[]> {
  const scratch = mkdtempSync(join(tmpdir(), 'bench-workflow-store-'));
  const before: Times = { claim: [], commit: [] };
  const after: Times = { claim: [], commit: [] };
  try {
    // The reference runs on a file today's migrations made (it never named the columns they dropped).
    const referenceDir = join(scratch, 'before');
    await (await openSqliteStore({ dataDir: referenceDir })).close();
    const raw = new Database(join(referenceDir, STORE_FILE_NAME), { timeout: 10_000 });
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = NORMAL');
    raw.pragma('foreign_keys = ON');
    const reference = createStoreBeforeKysely({ db: raw, now: () => new Date(), newId: () => crypto.randomUUID() });
    const current = await openSqliteStore({ dataDir: join(scratch, 'after') });
    try {
      for (let run = 0; run < RUNS; run++) {
        await reference.createRun({ agentId: 'bench', definition, maxRunningPerAgent: 1_000 });
        await current.workflows.createRun({ agentId: 'bench', definition, maxRunningPerAgent: 1_000 });
        // Which store goes first alternates, so neither always follows the other's commit.
        for (let index = 0, going = [true, true]; going[0] || going[1]; index++) {
          const order = index % 2 === 0 ? [0, 1] : [1, 0];
          for (const which of order) if (going[which]) going[which] = await step(which === 0 ? reference : current.workflows, which === 0 ? before : after);
        }
      }
    } finally {
      raw.close();
      await current.close();
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const row = (path: keyof Times, what: string): BenchRow => {
    const value = quantile(after[path], 0.5);
    const reference = quantile(before[path], 0.5);
    return {
      suite: 'workflows',
      name: `SQLite store: ${what} (${TASKS}-task runs, ${RUNS} of them, in lockstep with the reference)`,
      value,
      unit: 'µs p50',
      reference: `the store before Kysely (bench/reference/), ${reference.toFixed(0)} µs p50`,
      ratio: value / reference,
      note: 'lower is better; 1.00× is as fast as before',
    };
  };
  return [row('claim', 'claimTask'), row('commit', 'commitResult')];
}
