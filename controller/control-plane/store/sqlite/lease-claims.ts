import { sql, type Kysely } from 'kysely';
import { changes, first, prepare, rows, type StoreContext } from '../store-context.js';
import type { SqliteDatabase } from '../store-schema.js';
import { INTERRUPTED_BY_GONE_RUNNER, type TaskClaims, type WorkflowSteps } from '../sql-workflow-store.js';

/** A list as one JSON parameter (read with json_each), so the statement is prepared once whatever its length. */
const jsonList = (values: readonly string[] | undefined) => (values === undefined ? null : JSON.stringify(values));

/**
 * SQLite's task claims: a claim is a lease on the task's row (`claim_owner`, `claim_until`,
 * `claim_id`) that its runner renews. `claimTask` looks for a ready task as it claims, in one
 * IMMEDIATE transaction: the attempts of runners that are gone (lease run out, or named in
 * `takeOverFrom`) are logged `interrupted` and their tasks claimed again.
 */
export function leaseTaskClaims(context: StoreContext): (steps: WorkflowSteps) => TaskClaims {
  const db = context.db as unknown as Kysely<SqliteDatabase>;
  const q = {
    runs: prepare((p: { runIds: string | null; agentIds: string | null }) =>
      db
        .selectFrom('workflow_runs')
        .selectAll()
        .where('state', '=', 'running')
        .where(sql<boolean>`(${p.runIds} IS NULL OR run_id IN (SELECT value FROM json_each(${p.runIds})))`)
        .where(sql<boolean>`(${p.agentIds} IS NULL OR agent_id IN (SELECT value FROM json_each(${p.agentIds})))`)
        .orderBy('created_at')
        .orderBy(sql`rowid`),
    ),
    running: prepare((p: { runId: string }) => db.selectFrom('workflow_tasks').select(['task_id', 'claim_owner', 'claim_until']).where('run_id', '=', p.runId).where('state', '=', 'running')),
    start: prepare((p: { attempt: number; owner: string; until: number; claimId: string; runId: string; taskId: string }) =>
      db
        .updateTable('workflow_tasks')
        .set({ state: 'running', attempts: p.attempt, claim_owner: p.owner, claim_until: p.until, claim_id: p.claimId })
        .where('run_id', '=', p.runId)
        .where('task_id', '=', p.taskId)
        .where('state', '=', 'pending'),
    ),
    renew: prepare((p: { until: number; runId: string; taskId: string; attempt: number; owner: string; claimId: string }) =>
      db
        .updateTable('workflow_tasks')
        .set({ claim_until: p.until })
        .where('run_id', '=', p.runId)
        .where('task_id', '=', p.taskId)
        .where('attempts', '=', p.attempt)
        .where('claim_owner', '=', p.owner)
        .where('claim_id', '=', p.claimId)
        .where('state', '=', 'running')
        .where(({ exists, selectFrom }) => exists(selectFrom('workflow_runs as r').select('r.run_id').whereRef('r.run_id', '=', 'workflow_tasks.run_id').where('r.state', '=', 'running'))),
    ),
  };
  return (steps) => ({
    async claimTask(input) {
      if (input.runIds?.length === 0 || input.agentIds?.length === 0) return undefined;
      return context.transaction(function* () {
        const nowMs = context.now().getTime();
        const gone = new Set(input.takeOverFrom ?? []);
        for (const run of yield* rows(q.runs({ runIds: jsonList(input.runIds), agentIds: jsonList(input.agentIds) }))) {
          let running = 0;
          for (const task of yield* rows(q.running({ runId: run.run_id }))) {
            const abandoned = task.claim_owner === null || task.claim_until === null || task.claim_until <= nowMs || gone.has(task.claim_owner);
            if (!abandoned || task.claim_owner === input.owner) {
              running++;
              continue;
            }
            yield* steps.closeAttempts(run.run_id, task.task_id, 'interrupted', INTERRUPTED_BY_GONE_RUNNER);
            yield* steps.releaseTask(run.run_id, task.task_id);
          }
          if (running >= run.max_parallel) continue;
          const [next] = yield* steps.readyTasks(run.run_id, 1);
          if (!next) continue;
          const attempt = next.attempts + 1;
          const claimId = `${run.run_id}/${next.task_id}/${attempt}`;
          yield* changes(q.start({ attempt, owner: input.owner, until: nowMs + input.leaseMs, claimId, runId: run.run_id, taskId: next.task_id }));
          yield* steps.logAttempt(run.run_id, next.task_id, attempt, input.owner);
          return { runId: run.run_id, taskId: next.task_id, agentId: run.agent_id, attempt, claimId };
        }
        return undefined;
      });
    },

    async renewClaims(input) {
      if (input.claims.length === 0) return [];
      return context.transaction(function* () {
        const until = context.now().getTime() + input.leaseMs;
        const held = [];
        for (const claim of input.claims) {
          if ((yield* changes(q.renew({ until, runId: claim.runId, taskId: claim.taskId, attempt: claim.attempt, owner: input.owner, claimId: claim.claimId }))) === 1) held.push(claim);
        }
        return held;
      });
    },
  });
}
