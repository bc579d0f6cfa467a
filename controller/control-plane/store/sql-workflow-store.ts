import { sql, type CompiledQuery, type Selectable } from 'kysely';
import { ControlPlaneError } from '../domain/control-plane-error.js';
import { changes, first, forUpdate, insertionOrder, lockKey, prepare, rows, type Script, type StoreContext } from './store-context.js';
import type { WorkflowRunsTable } from './store-schema.js';
import type { AttemptSettled, WorkflowAttemptRecord, WorkflowRunRecord, WorkflowRunState, WorkflowStore, WorkflowTaskRecord, WorkflowTaskState } from '../domain/workflows/workflow-store.js';

/** The error a run records when one of its tasks used up its attempts. */
export function taskFailedError(taskId: string, failedAttempts: number, reason: string): string {
  return `task "${taskId}" failed after ${failedAttempts} attempt${failedAttempts === 1 ? '' : 's'}: ${reason || 'no reason'}`;
}

/** What an attempt left running by a runner that is gone is logged with. */
export const INTERRUPTED_BY_GONE_RUNNER = 'the runner that ran this attempt stopped or lost its claim';

/** A run's row. */
export type RunRow = Selectable<WorkflowRunsTable>;

/** The steps of a claim that both databases take the same way, lent to the claim mechanism. */
export interface WorkflowSteps {
  /** Reads a run's row and locks it for the rest of the transaction (FOR UPDATE on PostgreSQL). */
  lockRun(runId: string): Script<RunRow | undefined>;
  /** The run's running tasks and their claims. */
  runningTasks(runId: string): Script<Array<{ task_id: string; claim_id: string | null; claim_owner: string | null }>>;
  /**
   * Up to `limit` tasks of the run that are ready, in definition order: pending and every
   * dependency committed (a pending task's claim_id is not looked at: a controller of schema 5
   * still running during an upgrade writes its pg-boss claim there). One SQL rule on both databases.
   */
  readyTasks(runId: string, limit: number): Script<Array<{ task_id: string; attempts: number }>>;
  /** Logs the task's open attempts (normally one) with `outcome`. */
  closeAttempts(runId: string, taskId: string, outcome: 'interrupted' | 'cancelled', error: string): Script<void>;
  /** The task is pending again, its claim gone. */
  releaseTask(runId: string, taskId: string): Script<void>;
  /** Logs a new attempt started by `owner`. */
  logAttempt(runId: string, taskId: string, attempt: number, owner: string): Script<void>;
}

/**
 * How a task attempt is claimed: a lease on the task's row (`claim_owner`, `claim_until`,
 * `claim_id`) on both databases, which its runner renews, found the way each database does best.
 * SQLite (sqlite/lease-claims.ts) looks for a ready task run by run inside its IMMEDIATE transaction,
 * where a step costs no round trip; PostgreSQL (postgres/row-task-claims.ts) finds one with a single
 * indexed SKIP LOCKED query, whatever the number of runs and agents.
 */
export interface TaskClaims {
  claimTask: WorkflowStore['claimTask'];
  renewClaims: WorkflowStore['renewClaims'];
}

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
  };
}

/**
 * The workflow part of the store, on either database. Every change reads the run through `lockRun`
 * first, so two controllers working on one run serialise on PostgreSQL (SQLite's IMMEDIATE
 * transactions already do). How an attempt is claimed is the `claims`' own. The store itself ends a
 * run: the commit of its last task succeeds it, the failure that uses up a task's attempts fails it,
 * in the same transaction.
 */
export function createSqlWorkflowStore(context: StoreContext, makeClaims: (steps: WorkflowSteps) => TaskClaims): WorkflowStore {
  const { db } = context;
  const iso = () => context.now().toISOString();
  // A task's dependencies as rows with a `value` column: the one place the dialects' JSON differs.
  const dependencies = context.dialect === 'postgres' ? sql`jsonb_array_elements_text(t.depends_on_json::jsonb) AS d(value)` : sql`json_each(t.depends_on_json) AS d`;
  // The claim and commit paths' statements, compiled once (see `prepare`).
  const q = {
    lockRun: prepare((p: { runId: string }) => forUpdate(context, db.selectFrom('workflow_runs').selectAll().where('run_id', '=', p.runId))),
    runState: prepare((p: { runId: string }) => db.selectFrom('workflow_runs').select(['state', 'error']).where('run_id', '=', p.runId)),
    runningTasks: prepare((p: { runId: string }) => db.selectFrom('workflow_tasks').select(['task_id', 'claim_id', 'claim_owner']).where('run_id', '=', p.runId).where('state', '=', 'running')),
    task: prepare((p: { runId: string; taskId: string }) => db.selectFrom('workflow_tasks').selectAll().where('run_id', '=', p.runId).where('task_id', '=', p.taskId)),
    closeAttempt: prepare((p: { at: string; outcome: string; error: string; runId: string; taskId: string; attempt: number }) =>
      db
        .updateTable('workflow_attempts')
        .set({ finished_at: p.at, outcome: p.outcome as 'failed', error: p.error })
        .where('run_id', '=', p.runId)
        .where('task_id', '=', p.taskId)
        .where('attempt', '=', p.attempt)
        .where('finished_at', 'is', null),
    ),
    closeAttempts: prepare((p: { at: string; outcome: string; error: string; runId: string; taskId: string }) =>
      db.updateTable('workflow_attempts').set({ finished_at: p.at, outcome: p.outcome as 'cancelled', error: p.error }).where('run_id', '=', p.runId).where('task_id', '=', p.taskId).where('finished_at', 'is', null),
    ),
    releaseTask: prepare((p: { runId: string; taskId: string }) =>
      db.updateTable('workflow_tasks').set({ state: 'pending', claim_id: null, claim_owner: null }).where('run_id', '=', p.runId).where('task_id', '=', p.taskId),
    ),
    logAttempt: prepare((p: { runId: string; taskId: string; attempt: number; at: string; owner: string }) =>
      db.insertInto('workflow_attempts').values({ run_id: p.runId, task_id: p.taskId, attempt: p.attempt, started_at: p.at, finished_at: null, outcome: null, error: null, owner: p.owner }),
    ),
    endTask: prepare((p: { state: string; failed: number; error: string; runId: string; taskId: string }) =>
      db
        .updateTable('workflow_tasks')
        .set({ state: p.state as 'failed', failed_attempts: p.failed, error: p.error, claim_id: null, claim_owner: null })
        .where('run_id', '=', p.runId)
        .where('task_id', '=', p.taskId),
    ),
    insertResult: prepare((p: { runId: string; taskId: string; attempt: number; resultJson: string; at: string }) =>
      db
        .insertInto('workflow_results')
        .values({ run_id: p.runId, task_id: p.taskId, attempt: p.attempt, result_json: p.resultJson, committed_at: p.at })
        .onConflict((conflict) => conflict.columns(['run_id', 'task_id']).doNothing()),
    ),
    // The committed attempt, and any open attempt of a runner that took the task over meanwhile (it has nothing left to do), in one statement.
    closeCommitted: prepare((p: { at: string; attempt: number; runId: string; taskId: string }) =>
      db
        .updateTable('workflow_attempts')
        .set({
          finished_at: p.at,
          outcome: sql<'committed'>`CASE WHEN attempt = ${p.attempt} THEN 'committed' ELSE 'cancelled' END`,
          error: sql<string>`CASE WHEN attempt = ${p.attempt} THEN '' ELSE 'another attempt committed the task first' END`,
        })
        .where('run_id', '=', p.runId)
        .where('task_id', '=', p.taskId)
        .where('finished_at', 'is', null),
    ),
    commitTask: prepare((p: { runId: string; taskId: string }) =>
      db.updateTable('workflow_tasks').set({ state: 'committed', error: null, claim_id: null, claim_owner: null }).where('run_id', '=', p.runId).where('task_id', '=', p.taskId),
    ),
    // Any task left to commit: stops at the first (a count read the run's every task, the commit path's dearest step).
    uncommitted: prepare((p: { runId: string }) => db.selectFrom('workflow_tasks').select('task_id').where('run_id', '=', p.runId).where('state', '!=', 'committed').limit(sql.lit(1))),
    tasksOf: prepare((p: { runId: string }) =>
      db
        .selectFrom('workflow_tasks as t')
        .leftJoin('workflow_results as r', (join) => join.onRef('r.run_id', '=', 't.run_id').onRef('r.task_id', '=', 't.task_id'))
        .select(['t.task_id', 't.prompt', 't.result_schema_json', 't.depends_on_json', 't.max_attempts', 't.state', 't.attempts', 't.failed_attempts', 't.error', 't.claim_owner', 'r.result_json'])
        .where('t.run_id', '=', p.runId)
        .orderBy('t.position'),
    ),
  };

  // One statement per limit, the limit a literal: a bound LIMIT made SQLite's claim query 2-3x slower.
  const readyQueries = new Map<number, (p: { runId: string }) => CompiledQuery<{ task_id: string; attempts: number }>>();
  const readyQuery = (limit: number) => {
    let ready = readyQueries.get(limit);
    if (!ready) {
      ready = prepare((p: { runId: string }) =>
        db
          .selectFrom('workflow_tasks as t')
          .select(['t.task_id', 't.attempts'])
          .where('t.run_id', '=', p.runId)
          .where('t.state', '=', 'pending')
          // Dependencies outside, each looked up by the primary key: a join let SQLite scan the run's tasks per candidate (6x slower).
          .where(sql<boolean>`NOT EXISTS (SELECT 1 FROM ${dependencies} WHERE NOT EXISTS (SELECT 1 FROM workflow_tasks u WHERE u.run_id = t.run_id AND u.task_id = d.value AND u.state = 'committed'))`)
          .orderBy('t.position')
          .limit(sql.lit(limit)),
      );
      readyQueries.set(limit, ready);
    }
    return ready;
  };

  const steps: WorkflowSteps = {
    lockRun: (runId) => first(q.lockRun({ runId })),
    runningTasks: (runId) => rows(q.runningTasks({ runId })),
    readyTasks: (runId, limit) => rows(readyQuery(limit)({ runId })),
    *closeAttempts(runId, taskId, outcome, error) {
      yield* changes(q.closeAttempts({ at: iso(), outcome, error, runId, taskId }));
    },
    *releaseTask(runId, taskId) {
      yield* changes(q.releaseTask({ runId, taskId }));
    },
    *logAttempt(runId, taskId, attempt, owner) {
      yield* changes(q.logAttempt({ runId, taskId, attempt, at: iso(), owner }));
    },
  };
  const claims = makeClaims(steps);

  function* tasksOf(runId: string): Script<WorkflowTaskRecord[]> {
    return (yield* rows(q.tasksOf({ runId }))).map((row) => ({
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
      ...(row.state === 'running' && row.claim_owner !== null ? { owner: row.claim_owner } : {}),
    }));
  }

  function* getRun(runId: string): Script<WorkflowRunRecord | undefined> {
    const row = yield* first(db.selectFrom('workflow_runs').selectAll().where('run_id', '=', runId));
    return row ? toRun(row, yield* tasksOf(runId)) : undefined;
  }

  /** Ends a running run: open attempts cancelled, claims dropped, tasks skipped or cancelled. */
  function* finishRunIn(run: RunRow, state: Exclude<WorkflowRunState, 'running'>, error: string | undefined): Script<void> {
    const runId = run.run_id;
    const at = iso();
    yield* changes(db.updateTable('workflow_attempts').set({ finished_at: at, outcome: 'cancelled', error: error ?? `the run ${state}` }).where('run_id', '=', runId).where('finished_at', 'is', null));
    yield* changes(db.updateTable('workflow_tasks').set({ state: 'skipped' }).where('run_id', '=', runId).where('state', '=', 'pending'));
    yield* changes(db.updateTable('workflow_tasks').set({ state: 'cancelled' }).where('run_id', '=', runId).where('state', '=', 'running'));
    yield* changes(db.updateTable('workflow_tasks').set({ claim_id: null, claim_owner: null }).where('run_id', '=', runId));
    yield* changes(db.updateTable('workflow_runs').set({ state, error: error ?? null, finished_at: at }).where('run_id', '=', runId));
  }

  function* settled(runId: string, taskState: WorkflowTaskState | undefined): Script<AttemptSettled> {
    const run = yield* first(q.runState({ runId }));
    return { taskState, runState: run?.state, ...(run && run.state !== 'running' && run.error !== null ? { runError: run.error } : {}) };
  }

  return {
    createRun(input) {
      return context.transaction(function* () {
        // Serialises creates per agent, so the running-runs limit holds across controllers.
        yield* lockKey(context, `workflow:${input.agentId}`);
        const { n } = (yield* first(
          db
            .selectFrom('workflow_runs')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('agent_id', '=', input.agentId)
            .where('state', '=', 'running'),
        ))!;
        if (n >= input.maxRunningPerAgent) {
          throw new ControlPlaneError(
            'limit_exceeded',
            `this agent already has ${n} running workflows (the limit is ${input.maxRunningPerAgent}); wait for one to finish or cancel one with workflow_cancel`,
          );
        }
        const runId = context.newId();
        const { definition } = input;
        const run: RunRow = { run_id: runId, agent_id: input.agentId, name: definition.name, state: 'running', max_parallel: definition.maxParallel, created_at: iso(), error: null, finished_at: null };
        yield* changes(db.insertInto('workflow_runs').values(run));
        for (const [position, task] of definition.tasks.entries()) {
          yield* changes(
            db.insertInto('workflow_tasks').values({
              run_id: runId,
              task_id: task.id,
              position,
              prompt: task.prompt,
              result_schema_json: JSON.stringify(task.resultSchema),
              depends_on_json: JSON.stringify(task.dependsOn),
              max_attempts: task.maxAttempts,
              state: 'pending',
            }),
          );
        }
        return (yield* getRun(runId))!;
      });
    },

    getRun(runId) {
      return context.read(() => getRun(runId));
    },

    listRuns(query) {
      return context.read(function* () {
        let select = db.selectFrom('workflow_runs').selectAll();
        if (query.agentId !== undefined) select = select.where('agent_id', '=', query.agentId);
        if (query.state !== undefined) select = select.where('state', '=', query.state);
        const runs = yield* rows(select.orderBy('created_at', 'desc').orderBy(insertionOrder(context), 'desc').limit(query.limit));
        const records: WorkflowRunRecord[] = [];
        for (const row of runs) records.push(toRun(row, yield* tasksOf(row.run_id)));
        return records;
      });
    },

    claimTask: (input) => claims.claimTask(input),
    renewClaims: (input) => claims.renewClaims(input),

    claimOwners() {
      return context.read(function* () {
        const owners = yield* rows(db.selectFrom('workflow_tasks').select('claim_owner').distinct().where('state', '=', 'running').where('claim_owner', 'is not', null));
        return owners.map((row) => row.claim_owner!);
      });
    },

    endAttempt(input) {
      return context.transaction(function* (): Script<AttemptSettled> {
        const run = yield* steps.lockRun(input.runId);
        const task = yield* first(q.task({ runId: input.runId, taskId: input.taskId }));
        if (!run || !task) return yield* settled(input.runId, undefined);
        const closed = yield* changes(q.closeAttempt({ at: iso(), outcome: input.outcome, error: input.error, runId: input.runId, taskId: input.taskId, attempt: input.attempt }));
        if (closed !== 1 || task.state !== 'running' || task.attempts !== input.attempt) return yield* settled(input.runId, task.state);
        const failed = task.failed_attempts + (input.outcome === 'failed' ? 1 : 0);
        const state: WorkflowTaskState = failed >= task.max_attempts ? 'failed' : 'pending';
        yield* changes(q.endTask({ state, failed, error: input.error, runId: input.runId, taskId: input.taskId }));
        if (state === 'failed') yield* finishRunIn(run, 'failed', taskFailedError(input.taskId, failed, input.error));
        return yield* settled(input.runId, state);
      });
    },

    commitResult(input) {
      const { runId, taskId, attempt } = input;
      return context.transaction(function* () {
        const run = yield* steps.lockRun(runId);
        if (!run || run.state !== 'running') return { committed: false, reason: 'not_running', runState: run?.state, ...(run?.error ? { runError: run.error } : {}) } as const;
        const at = iso();
        if ((yield* changes(q.insertResult({ runId, taskId, attempt, resultJson: input.resultJson, at }))) === 0) return { committed: false, reason: 'already_committed', runState: run.state } as const;
        yield* changes(q.commitTask({ runId, taskId }));
        yield* changes(q.closeCommitted({ at, attempt, runId, taskId }));
        // The run's state afterwards is known without reading it again: this transaction holds its lock.
        if ((yield* first(q.uncommitted({ runId }))) !== undefined) {
          return { committed: true, taskState: 'committed', runState: 'running' } as const;
        }
        yield* finishRunIn(run, 'succeeded', undefined);
        return { committed: true, taskState: 'committed', runState: 'succeeded' } as const;
      });
    },

    finishRun(input) {
      return context.transaction(function* () {
        const run = yield* steps.lockRun(input.runId);
        if (!run) return undefined;
        if (run.state === 'running') yield* finishRunIn(run, input.state, input.error);
        return yield* getRun(input.runId);
      });
    },

    listAttempts(runId) {
      return context.read(function* () {
        const attempts = yield* rows(
          db.selectFrom('workflow_attempts').select(['task_id', 'attempt', 'started_at', 'finished_at', 'outcome', 'error', 'owner']).where('run_id', '=', runId).orderBy(insertionOrder(context)),
        );
        return attempts.map(
          (row): WorkflowAttemptRecord => ({
            taskId: row.task_id,
            attempt: row.attempt,
            startedAt: row.started_at,
            ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
            ...(row.outcome !== null ? { outcome: row.outcome } : {}),
            ...(row.error !== null && row.error !== '' ? { error: row.error } : {}),
            ...(row.owner !== null ? { owner: row.owner } : {}),
          }),
        );
      });
    },
  };
}
