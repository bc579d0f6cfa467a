import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import { ControlPlaneError } from '../../control-plane-error.js';
import type { WorkflowAttemptRecord, WorkflowRunRecord, WorkflowStore, WorkflowTaskRecord, WorkflowTaskState } from '../workflow-store.js';
import type { PostgresStoreContext } from './open-postgres-store.js';
import type { PostgresDatabase, WorkflowRunsTable } from './postgres-schema.js';

type Db = Kysely<PostgresDatabase> | Transaction<PostgresDatabase>;
type RunRow = Selectable<WorkflowRunsTable>;

function toRun(row: RunRow, tasks: WorkflowTaskRecord[]): WorkflowRunRecord {
  return {
    runId: row.run_id,
    agentId: row.agent_id,
    name: row.name,
    state: row.state,
    maxParallel: row.max_parallel,
    tasks,
    createdAt: row.created_at,
    ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
    ...(row.owner !== null ? { owner: row.owner } : {}),
    ...(row.lease_until !== null ? { leaseUntil: row.lease_until } : {}),
  };
}

/** The tasks of the given runs with their committed results, grouped by run, in definition order. */
async function tasksOf(db: Db, runIds: string[]): Promise<Map<string, WorkflowTaskRecord[]>> {
  const byRun = new Map<string, WorkflowTaskRecord[]>(runIds.map((id) => [id, []]));
  if (runIds.length === 0) return byRun;
  const rows = await db
    .selectFrom('workflow_tasks as t')
    .leftJoin('workflow_results as r', (join) => join.onRef('r.run_id', '=', 't.run_id').onRef('r.task_id', '=', 't.task_id'))
    .select(['t.run_id', 't.task_id', 't.prompt', 't.result_schema_json', 't.depends_on_json', 't.max_attempts', 't.state', 't.attempts', 't.failed_attempts', 't.error', 'r.result_json'])
    .where('t.run_id', 'in', runIds)
    .orderBy('t.run_id')
    .orderBy('t.position')
    .execute();
  for (const row of rows) {
    byRun.get(row.run_id)?.push({
      taskId: row.task_id,
      state: row.state,
      attempts: row.attempts,
      failedAttempts: row.failed_attempts,
      maxAttempts: row.max_attempts,
      dependsOn: JSON.parse(row.depends_on_json) as string[],
      prompt: row.prompt,
      resultSchemaJson: row.result_schema_json,
      ...(row.result_json !== null ? { resultJson: row.result_json } : {}),
      ...(row.error !== null ? { error: row.error } : {}),
    });
  }
  return byRun;
}

async function getRun(db: Db, runId: string): Promise<WorkflowRunRecord | undefined> {
  const row = await db.selectFrom('workflow_runs').selectAll().where('run_id', '=', runId).executeTakeFirst();
  if (!row) return undefined;
  return toRun(row, (await tasksOf(db, [runId])).get(runId) ?? []);
}

/** Locks a run's row for the rest of the transaction: every change to a run and its tasks takes it first. */
async function lockRun(trx: Transaction<PostgresDatabase>, runId: string): Promise<RunRow | undefined> {
  return trx.selectFrom('workflow_runs').selectAll().where('run_id', '=', runId).forUpdate().executeTakeFirst();
}

async function closeOpenAttempts(trx: Transaction<PostgresDatabase>, runId: string, at: string, outcome: 'interrupted' | 'cancelled', error: string): Promise<void> {
  await trx.updateTable('workflow_attempts').set({ finished_at: at, outcome, error }).where('run_id', '=', runId).where('finished_at', 'is', null).execute();
}

/**
 * The workflow part of the PostgreSQL store. Every change locks the run's row first, so two
 * controllers working on one run serialise; claims skip rows another transaction holds.
 */
export function createPostgresWorkflowStore(context: PostgresStoreContext): WorkflowStore {
  const { db } = context;
  const iso = () => context.now().toISOString();
  const nowMs = () => context.now().getTime();
  const tx = <T>(work: (trx: Transaction<PostgresDatabase>) => Promise<T>) => db.transaction().execute(work);

  return {
    createRun(input) {
      return tx(async (trx) => {
        // Serialises creates per agent, so the running-runs limit holds across controllers.
        await sql`SELECT pg_advisory_xact_lock(hashtext(${`workflow:${input.agentId}`}))`.execute(trx);
        const { n } = await trx
          .selectFrom('workflow_runs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('agent_id', '=', input.agentId)
          .where('state', '=', 'running')
          .executeTakeFirstOrThrow();
        if (n >= input.maxRunningPerAgent) {
          throw new ControlPlaneError(
            'limit_exceeded',
            `this agent already has ${n} running workflows (the limit is ${input.maxRunningPerAgent}); wait for one to finish or cancel one with workflow_cancel`,
          );
        }
        const runId = context.newId();
        const { definition } = input;
        await trx
          .insertInto('workflow_runs')
          .values({
            run_id: runId,
            agent_id: input.agentId,
            name: definition.name,
            state: 'running',
            max_parallel: definition.maxParallel,
            created_at: iso(),
            owner: input.owner ?? null,
            lease_until: input.owner ? nowMs() + (input.leaseMs ?? 0) : null,
          })
          .execute();
        if (definition.tasks.length > 0) {
          await trx
            .insertInto('workflow_tasks')
            .values(
              definition.tasks.map((task, position) => ({
                run_id: runId,
                task_id: task.id,
                position,
                prompt: task.prompt,
                result_schema_json: JSON.stringify(task.resultSchema),
                depends_on_json: JSON.stringify(task.dependsOn),
                max_attempts: task.maxAttempts,
                state: 'pending' as const,
              })),
            )
            .execute();
        }
        return (await getRun(trx, runId))!;
      });
    },

    getRun(runId) {
      return getRun(db, runId);
    },

    async listRuns(query) {
      let select = db.selectFrom('workflow_runs').selectAll();
      if (query.agentId !== undefined) select = select.where('agent_id', '=', query.agentId);
      if (query.state !== undefined) select = select.where('state', '=', query.state);
      const rows = await select.orderBy('created_at', 'desc').orderBy('seq', 'desc').limit(query.limit).execute();
      const tasks = await tasksOf(db, rows.map((row) => row.run_id));
      return rows.map((row) => toRun(row, tasks.get(row.run_id) ?? []));
    },

    claimRuns(input) {
      return tx(async (trx) => {
        const now = nowMs();
        const takeOver = input.takeOverFrom ?? [];
        let select = trx
          .selectFrom('workflow_runs')
          .selectAll()
          .where('state', '=', 'running')
          // The runner already runs what it holds; a claim is for runs someone else left.
          .where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '!=', input.owner)]))
          .where((eb) =>
            eb.or([
              eb('owner', 'is', null),
              eb('lease_until', 'is', null),
              eb('lease_until', '<=', now),
              ...(takeOver.length > 0 ? [eb('owner', 'in', takeOver)] : []),
            ]),
          );
        if (input.runId !== undefined) select = select.where('run_id', '=', input.runId);
        // SKIP LOCKED: a run another controller is claiming or changing right now is not free.
        const rows = await select.orderBy('created_at').orderBy('seq').forUpdate().skipLocked().execute();
        const at = iso();
        for (const row of rows) {
          await closeOpenAttempts(trx, row.run_id, at, 'interrupted', 'the runner that ran this attempt stopped');
          await trx.updateTable('workflow_tasks').set({ state: 'pending' }).where('run_id', '=', row.run_id).where('state', '=', 'running').execute();
          await trx.updateTable('workflow_runs').set({ owner: input.owner, lease_until: now + input.leaseMs }).where('run_id', '=', row.run_id).execute();
        }
        return rows.map((row) => row.run_id);
      });
    },

    async renewLeases(input) {
      if (input.runIds.length === 0) return [];
      const rows = await db
        .updateTable('workflow_runs')
        .set({ lease_until: nowMs() + input.leaseMs })
        .where('run_id', 'in', input.runIds)
        .where('owner', '=', input.owner)
        .where('state', '=', 'running')
        .returning('run_id')
        .execute();
      const held = new Set(rows.map((row) => row.run_id));
      return input.runIds.filter((runId) => held.has(runId));
    },

    async releaseRun(input) {
      await db.updateTable('workflow_runs').set({ owner: null, lease_until: null }).where('run_id', '=', input.runId).where('owner', '=', input.owner).execute();
    },

    startAttempt(input) {
      return tx(async (trx) => {
        const run = await lockRun(trx, input.runId);
        if (!run || run.state !== 'running') return undefined;
        const task = await trx.selectFrom('workflow_tasks').select(['state', 'attempts']).where('run_id', '=', input.runId).where('task_id', '=', input.taskId).executeTakeFirst();
        if (!task || task.state !== 'pending') return undefined;
        const attempt = task.attempts + 1;
        await trx.updateTable('workflow_tasks').set({ state: 'running', attempts: attempt }).where('run_id', '=', input.runId).where('task_id', '=', input.taskId).execute();
        await trx.insertInto('workflow_attempts').values({ run_id: input.runId, task_id: input.taskId, attempt, started_at: iso(), finished_at: null, outcome: null, error: null }).execute();
        return attempt;
      });
    },

    endAttempt(input) {
      return tx(async (trx): Promise<WorkflowTaskState | undefined> => {
        await lockRun(trx, input.runId);
        const task = await trx
          .selectFrom('workflow_tasks')
          .select(['state', 'attempts', 'failed_attempts', 'max_attempts'])
          .where('run_id', '=', input.runId)
          .where('task_id', '=', input.taskId)
          .executeTakeFirst();
        if (!task) return undefined;
        const closed = await trx
          .updateTable('workflow_attempts')
          .set({ finished_at: iso(), outcome: input.outcome, error: input.error })
          .where('run_id', '=', input.runId)
          .where('task_id', '=', input.taskId)
          .where('attempt', '=', input.attempt)
          .where('finished_at', 'is', null)
          .executeTakeFirst();
        if (closed.numUpdatedRows !== 1n || task.state !== 'running' || task.attempts !== input.attempt) return task.state;
        const failed = task.failed_attempts + (input.outcome === 'failed' ? 1 : 0);
        const state: WorkflowTaskState = failed >= task.max_attempts ? 'failed' : 'pending';
        await trx.updateTable('workflow_tasks').set({ state, failed_attempts: failed, error: input.error }).where('run_id', '=', input.runId).where('task_id', '=', input.taskId).execute();
        return state;
      });
    },

    commitResult(input) {
      return tx(async (trx) => {
        const run = await lockRun(trx, input.runId);
        if (!run || run.state !== 'running') return { committed: false, reason: 'not_running' } as const;
        const inserted = await trx
          .insertInto('workflow_results')
          .values({ run_id: input.runId, task_id: input.taskId, attempt: input.attempt, result_json: input.resultJson, committed_at: iso() })
          .onConflict((conflict) => conflict.columns(['run_id', 'task_id']).doNothing())
          .returning('attempt')
          .executeTakeFirst();
        if (!inserted) return { committed: false, reason: 'already_committed' } as const;
        await trx.updateTable('workflow_tasks').set({ state: 'committed', error: null }).where('run_id', '=', input.runId).where('task_id', '=', input.taskId).execute();
        await trx
          .updateTable('workflow_attempts')
          .set({ finished_at: iso(), outcome: 'committed', error: '' })
          .where('run_id', '=', input.runId)
          .where('task_id', '=', input.taskId)
          .where('attempt', '=', input.attempt)
          .where('finished_at', 'is', null)
          .execute();
        return { committed: true } as const;
      });
    },

    finishRun(input) {
      return tx(async (trx) => {
        const run = await lockRun(trx, input.runId);
        if (!run) return undefined;
        if (run.state === 'running') {
          const at = iso();
          await closeOpenAttempts(trx, input.runId, at, 'cancelled', input.error ?? `the run ${input.state}`);
          await trx.updateTable('workflow_tasks').set({ state: 'skipped' }).where('run_id', '=', input.runId).where('state', '=', 'pending').execute();
          await trx.updateTable('workflow_tasks').set({ state: 'cancelled' }).where('run_id', '=', input.runId).where('state', '=', 'running').execute();
          await trx
            .updateTable('workflow_runs')
            .set({ state: input.state, error: input.error ?? null, finished_at: at, owner: null, lease_until: null })
            .where('run_id', '=', input.runId)
            .execute();
        }
        return getRun(trx, input.runId);
      });
    },

    async listAttempts(runId) {
      const rows = await db
        .selectFrom('workflow_attempts')
        .select(['task_id', 'attempt', 'started_at', 'finished_at', 'outcome', 'error'])
        .where('run_id', '=', runId)
        .orderBy('seq')
        .execute();
      return rows.map(
        (row): WorkflowAttemptRecord => ({
          taskId: row.task_id,
          attempt: row.attempt,
          startedAt: row.started_at,
          ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
          ...(row.outcome !== null ? { outcome: row.outcome } : {}),
          ...(row.error !== null && row.error !== '' ? { error: row.error } : {}),
        }),
      );
    },
  };
}
