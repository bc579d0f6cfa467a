import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import { ControlPlaneError } from '../control-plane-error.js';
import type { AttemptSettled, TaskClaim, TaskClaimScope, WorkflowAttemptRecord, WorkflowRunRecord, WorkflowRunState, WorkflowStore, WorkflowTaskRecord, WorkflowTaskState } from './workflow-store.js';
import { allCommitted, INTERRUPTED_BY_GONE_RUNNER, readyTasks, taskFailedError } from './workflow-readiness.js';
import { TASK_ATTEMPT_QUEUE, type PgBossClaims, type QueuedJob } from './postgres/pg-boss-claims.js';
import type { PostgresStoreContext } from './store-context.js';
import type { PostgresDatabase, WorkflowRunsTable } from './store-schema.js';

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
  };
}

/** The tasks of the given runs with their committed results, grouped by run, in definition order. */
async function tasksOf(db: Db, runIds: string[]): Promise<Map<string, WorkflowTaskRecord[]>> {
  const byRun = new Map<string, WorkflowTaskRecord[]>(runIds.map((id) => [id, []]));
  if (runIds.length === 0) return byRun;
  const rows = await db
    .selectFrom('workflow_tasks as t')
    .leftJoin('workflow_results as r', (join) => join.onRef('r.run_id', '=', 't.run_id').onRef('r.task_id', '=', 't.task_id'))
    .select(['t.run_id', 't.task_id', 't.prompt', 't.result_schema_json', 't.depends_on_json', 't.max_attempts', 't.state', 't.attempts', 't.failed_attempts', 't.error', 't.claim_owner', 'r.result_json'])
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
      ...(row.state === 'running' && row.claim_owner !== null ? { owner: row.claim_owner } : {}),
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

/** How many claims one `claimTask` looks at before it gives up for now. */
const FETCHES_PER_CLAIM = 16;

/** The columns of a run's tasks that claims and readiness need, in definition order. */
async function claimRows(trx: Transaction<PostgresDatabase>, runId: string) {
  const rows = await trx
    .selectFrom('workflow_tasks')
    .select(['task_id', 'state', 'attempts', 'failed_attempts', 'max_attempts', 'depends_on_json', 'claim_id', 'claim_owner'])
    .where('run_id', '=', runId)
    .orderBy('position')
    .execute();
  return rows.map((row) => ({ ...row, taskId: row.task_id, dependsOn: JSON.parse(row.depends_on_json) as string[] }));
}

function inScope(run: RunRow, scope: TaskClaimScope): boolean {
  return (scope.runIds === undefined || scope.runIds.includes(run.run_id)) && (scope.agentIds === undefined || scope.agentIds.includes(run.agent_id));
}

/**
 * The workflow part of the PostgreSQL store. Every change locks the run's row first, so two
 * controllers working on one run serialise. Every task attempt is a pg-boss job: the transaction
 * that makes a task ready queues it (never more than `maxParallel` of a run queued or running),
 * `claimTask` fetches one with pg-boss's SKIP LOCKED claim, and the transaction that commits, fails
 * or interrupts the attempt ends its job. A controller that dies holding one loses it when pg-boss
 * expires the job; the next `claimTask` to fetch it logs the old attempt `interrupted` and runs a
 * new one.
 */
export function createPostgresWorkflowStore(context: PostgresStoreContext, claims: PgBossClaims): WorkflowStore {
  const { db } = context;
  const iso = () => context.now().toISOString();
  const nowMs = () => context.now().getTime();
  const tx = <T>(work: (trx: Transaction<PostgresDatabase>) => Promise<T>) => db.transaction().execute(work);

  /** Closes a task's open attempts (normally one) with `outcome`. */
  const closeTaskAttempts = (trx: Transaction<PostgresDatabase>, runId: string, taskId: string, outcome: 'interrupted' | 'cancelled', error: string) =>
    trx.updateTable('workflow_attempts').set({ finished_at: iso(), outcome, error }).where('run_id', '=', runId).where('task_id', '=', taskId).where('finished_at', 'is', null).execute();

  /** Queues attempts of the run's ready tasks while fewer than max_parallel are queued or running. */
  const fillSlots = async (trx: Transaction<PostgresDatabase>, run: RunRow) => {
    const tasks = await claimRows(trx, run.run_id);
    const busy = tasks.filter((task) => task.state === 'running' || (task.state === 'pending' && task.claim_id !== null)).length;
    const ready = readyTasks(tasks.filter((task) => task.claim_id === null)).slice(0, Math.max(0, run.max_parallel - busy));
    for (const task of ready) {
      const claimId = await claims.enqueueTask(trx, { agentId: run.agent_id, runId: run.run_id, taskId: task.task_id });
      await trx.updateTable('workflow_tasks').set({ claim_id: claimId, claim_owner: null, claim_until: null }).where('run_id', '=', run.run_id).where('task_id', '=', task.task_id).execute();
    }
  };

  /** Ends a running run in the transaction: open attempts cancelled, claims ended, tasks skipped or cancelled. */
  const finishRunIn = async (trx: Transaction<PostgresDatabase>, run: RunRow, state: Exclude<WorkflowRunState, 'running'>, error: string | undefined) => {
    const runId = run.run_id;
    const at = iso();
    await trx.updateTable('workflow_attempts').set({ finished_at: at, outcome: 'cancelled', error: error ?? `the run ${state}` }).where('run_id', '=', runId).where('finished_at', 'is', null).execute();
    const held = await trx.selectFrom('workflow_tasks').select('claim_id').where('run_id', '=', runId).where('claim_id', 'is not', null).execute();
    await claims.endTasks(trx, run.agent_id, held.map((row) => row.claim_id!));
    await trx.updateTable('workflow_tasks').set({ state: 'skipped' }).where('run_id', '=', runId).where('state', '=', 'pending').execute();
    await trx.updateTable('workflow_tasks').set({ state: 'cancelled' }).where('run_id', '=', runId).where('state', '=', 'running').execute();
    await trx.updateTable('workflow_tasks').set({ claim_id: null, claim_owner: null, claim_until: null }).where('run_id', '=', runId).execute();
    await trx.updateTable('workflow_runs').set({ state, error: error ?? null, finished_at: at, owner: null, lease_until: null }).where('run_id', '=', runId).execute();
  };

  const settled = async (trx: Transaction<PostgresDatabase>, runId: string, taskState: WorkflowTaskState | undefined): Promise<AttemptSettled> => {
    const run = await trx.selectFrom('workflow_runs').select(['state', 'error']).where('run_id', '=', runId).executeTakeFirst();
    return { taskState, runState: run?.state, ...(run && run.state !== 'running' && run.error !== null ? { runError: run.error } : {}) };
  };

  /** Running tasks of runs in scope whose owner is named as gone: their attempts are interrupted and queued again. */
  const takeOver = (input: Parameters<WorkflowStore['claimTask']>[0], gone: readonly string[]) =>
    tx(async (trx) => {
      const rows = await trx
        .selectFrom('workflow_tasks as t')
        .innerJoin('workflow_runs as r', 'r.run_id', 't.run_id')
        .select(['t.run_id'])
        .distinct()
        .where('t.state', '=', 'running')
        .where('r.state', '=', 'running')
        .where('t.claim_owner', 'in', gone)
        .execute();
      for (const { run_id: runId } of rows) {
        const run = await lockRun(trx, runId);
        if (!run || run.state !== 'running' || !inScope(run, input)) continue;
        for (const task of await claimRows(trx, runId)) {
          if (task.state !== 'running' || task.claim_owner === null || !gone.includes(task.claim_owner)) continue;
          await closeTaskAttempts(trx, runId, task.task_id, 'interrupted', INTERRUPTED_BY_GONE_RUNNER);
          if (task.claim_id !== null) await claims.endTasks(trx, run.agent_id, [task.claim_id]);
          await trx.updateTable('workflow_tasks').set({ state: 'pending', claim_id: null, claim_owner: null, claim_until: null }).where('run_id', '=', runId).where('task_id', '=', task.task_id).execute();
        }
        await fillSlots(trx, run);
      }
    });

  const agentsOfRuns = async (runIds: readonly string[]) =>
    runIds.length === 0 ? [] : (await db.selectFrom('workflow_runs').select('agent_id').distinct().where('run_id', 'in', [...runIds]).execute()).map((row) => row.agent_id);

  const agentsOfRunningRuns = async () =>
    (await db.selectFrom('workflow_runs').select('agent_id').distinct().where('state', '=', 'running').execute()).map((row) => row.agent_id);

  /**
   * Moves task attempts an earlier version queued on the one shared queue to their agents' queues
   * (a few per claim, so a controller's first claims after an upgrade drain it). An attempt that
   * version's controller still runs stays active there until it ends or expires, then moves.
   */
  const moveLegacyTasks = async () => {
    for (let moves = 0; moves < FETCHES_PER_CLAIM; moves++) {
      const old = await claims.fetchLegacy<{ runId: string; taskId: string }>(TASK_ATTEMPT_QUEUE);
      if (!old) return;
      try {
        const [agentId] = await agentsOfRuns([old.data.runId]);
        if (agentId !== undefined) await claims.ensureAgents([agentId]);
        await tx(async (trx) => {
          const run = await lockRun(trx, old.data.runId);
          const task = await trx.selectFrom('workflow_tasks').select(['state', 'claim_id']).where('run_id', '=', old.data.runId).where('task_id', '=', old.data.taskId).executeTakeFirst();
          if (run && run.state === 'running' && task && task.claim_id === old.id && (task.state === 'pending' || task.state === 'running')) {
            const claimId = await claims.enqueueTask(trx, { agentId: run.agent_id, runId: run.run_id, taskId: old.data.taskId });
            await trx.updateTable('workflow_tasks').set({ claim_id: claimId }).where('run_id', '=', run.run_id).where('task_id', '=', old.data.taskId).execute();
          }
          await claims.complete(old, trx);
        });
      } catch (error) {
        await claims.handBack([old]).catch(() => undefined);
        throw error;
      }
    }
  };

  return {
    claimLifetimeMs: claims.expireInSeconds * 1000,

    async createRun(input) {
      await claims.ensureAgents([input.agentId]);
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
        const run = await trx
          .insertInto('workflow_runs')
          .values({ run_id: runId, agent_id: input.agentId, name: definition.name, state: 'running', max_parallel: definition.maxParallel, created_at: iso(), owner: null, lease_until: null })
          .returningAll()
          .executeTakeFirstOrThrow();
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
        await fillSlots(trx, run);
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

    async claimTask(input) {
      if ((input.runIds && input.runIds.length === 0) || (input.agentIds && input.agentIds.length === 0)) return undefined;
      const gone = (input.takeOverFrom ?? []).filter((owner) => owner !== input.owner);
      if (gone.length > 0) await takeOver(input, gone);
      // Only the queues of the agents in scope: a runner never fetches work it would hand back.
      const agents = input.agentIds ?? (input.runIds ? await agentsOfRuns(input.runIds) : await agentsOfRunningRuns());
      if (agents.length === 0) return undefined;
      await claims.ensureAgents(agents);
      await moveLegacyTasks();
      const notHere: QueuedJob[] = [];
      try {
        for (let fetches = 0; fetches < FETCHES_PER_CLAIM; fetches++) {
          const job = await claims.fetchTask(agents);
          if (!job) return undefined;
          const taken = await tx(async (trx): Promise<TaskClaim | 'done' | 'not-here'> => {
            const run = await lockRun(trx, job.runId);
            const task = await trx.selectFrom('workflow_tasks').selectAll().where('run_id', '=', job.runId).where('task_id', '=', job.taskId).executeTakeFirst();
            // The run ended, the task moved on, or this job is not the task's claim any more: nothing to run.
            if (!run || run.state !== 'running' || !task || task.claim_id !== job.id || (task.state !== 'pending' && task.state !== 'running')) {
              await claims.complete(job, trx);
              return 'done';
            }
            if (!inScope(run, input)) return 'not-here';
            // A running task's job offered again: pg-boss expired the claim of the runner that ran it.
            if (task.state === 'running') await closeTaskAttempts(trx, run.run_id, task.task_id, 'interrupted', INTERRUPTED_BY_GONE_RUNNER);
            const attempt = task.attempts + 1;
            await trx
              .updateTable('workflow_tasks')
              .set({ state: 'running', attempts: attempt, claim_owner: input.owner, claim_until: nowMs() + claims.expireInSeconds * 1000 })
              .where('run_id', '=', run.run_id)
              .where('task_id', '=', task.task_id)
              .execute();
            await trx.insertInto('workflow_attempts').values({ run_id: run.run_id, task_id: task.task_id, attempt, started_at: iso(), finished_at: null, outcome: null, error: null, owner: input.owner }).execute();
            return { runId: run.run_id, taskId: task.task_id, agentId: run.agent_id, attempt, claimId: job.id };
          }).catch(async (error: unknown) => {
            // The job was fetched (made active) outside this transaction: hand it back (in `finally`), or it would
            // stay claimed by nobody until pg-boss expires it (--claim-expiry-s, 900 s by default).
            notHere.push(job);
            throw error;
          });
          if (taken === 'not-here') notHere.push(job);
          else if (taken !== 'done') return taken;
        }
        return undefined;
      } finally {
        // Handed back after the loop, so this call does not fetch them again; another controller will.
        await claims.handBack(notHere);
      }
    },

    async renewClaims(input) {
      if (input.claims.length === 0) return [];
      // pg-boss's claims do not extend: a claim only lasts `--claim-expiry-s`; this reports which still hold.
      const rows = await db
        .selectFrom('workflow_tasks as t')
        .innerJoin('workflow_runs as r', 'r.run_id', 't.run_id')
        .select(['t.run_id', 't.task_id', 't.attempts', 't.claim_id'])
        .where('t.claim_owner', '=', input.owner)
        .where('t.state', '=', 'running')
        .where('r.state', '=', 'running')
        .where('t.run_id', 'in', [...new Set(input.claims.map((claim) => claim.runId))])
        .execute();
      const held = new Set(rows.map((row) => `${row.run_id}\u0000${row.task_id}\u0000${row.attempts}\u0000${row.claim_id}`));
      return input.claims.filter((claim) => held.has(`${claim.runId}\u0000${claim.taskId}\u0000${claim.attempt}\u0000${claim.claimId}`));
    },

    async claimOwners() {
      const rows = await db.selectFrom('workflow_tasks').select('claim_owner').distinct().where('state', '=', 'running').where('claim_owner', 'is not', null).execute();
      return rows.map((row) => row.claim_owner!);
    },

    endAttempt(input) {
      return tx(async (trx): Promise<AttemptSettled> => {
        const run = await lockRun(trx, input.runId);
        const task = await trx.selectFrom('workflow_tasks').selectAll().where('run_id', '=', input.runId).where('task_id', '=', input.taskId).executeTakeFirst();
        if (!run || !task) return settled(trx, input.runId, undefined);
        const closed = await trx
          .updateTable('workflow_attempts')
          .set({ finished_at: iso(), outcome: input.outcome, error: input.error })
          .where('run_id', '=', input.runId)
          .where('task_id', '=', input.taskId)
          .where('attempt', '=', input.attempt)
          .where('finished_at', 'is', null)
          .executeTakeFirst();
        if (closed.numUpdatedRows !== 1n || task.state !== 'running' || task.attempts !== input.attempt) return settled(trx, input.runId, task.state);
        const failed = task.failed_attempts + (input.outcome === 'failed' ? 1 : 0);
        const state: WorkflowTaskState = failed >= task.max_attempts ? 'failed' : 'pending';
        if (task.claim_id !== null) await claims.endTasks(trx, run.agent_id, [task.claim_id]);
        await trx
          .updateTable('workflow_tasks')
          .set({ state, failed_attempts: failed, error: input.error, claim_id: null, claim_owner: null, claim_until: null })
          .where('run_id', '=', input.runId)
          .where('task_id', '=', input.taskId)
          .execute();
        if (state === 'failed') await finishRunIn(trx, run, 'failed', taskFailedError(input.taskId, failed, input.error));
        else await fillSlots(trx, run);
        return settled(trx, input.runId, state);
      });
    },

    commitResult(input) {
      return tx(async (trx) => {
        const run = await lockRun(trx, input.runId);
        if (!run || run.state !== 'running') return { committed: false, reason: 'not_running', runState: run?.state, ...(run?.error ? { runError: run.error } : {}) } as const;
        const inserted = await trx
          .insertInto('workflow_results')
          .values({ run_id: input.runId, task_id: input.taskId, attempt: input.attempt, result_json: input.resultJson, committed_at: iso() })
          .onConflict((conflict) => conflict.columns(['run_id', 'task_id']).doNothing())
          .returning('attempt')
          .executeTakeFirst();
        if (!inserted) return { committed: false, reason: 'already_committed', runState: run.state } as const;
        const task = await trx.selectFrom('workflow_tasks').select('claim_id').where('run_id', '=', input.runId).where('task_id', '=', input.taskId).executeTakeFirst();
        if (task?.claim_id) await claims.endTasks(trx, run.agent_id, [task.claim_id]);
        await trx
          .updateTable('workflow_tasks')
          .set({ state: 'committed', error: null, claim_id: null, claim_owner: null, claim_until: null })
          .where('run_id', '=', input.runId)
          .where('task_id', '=', input.taskId)
          .execute();
        await trx
          .updateTable('workflow_attempts')
          .set({ finished_at: iso(), outcome: 'committed', error: '' })
          .where('run_id', '=', input.runId)
          .where('task_id', '=', input.taskId)
          .where('attempt', '=', input.attempt)
          .where('finished_at', 'is', null)
          .execute();
        // An attempt of another runner that took the task over meanwhile has nothing left to do.
        await closeTaskAttempts(trx, input.runId, input.taskId, 'cancelled', 'another attempt committed the task first');
        if (allCommitted(await claimRows(trx, input.runId))) await finishRunIn(trx, run, 'succeeded', undefined);
        else await fillSlots(trx, run);
        return { committed: true, ...(await settled(trx, input.runId, 'committed')) } as const;
      });
    },

    finishRun(input) {
      return tx(async (trx) => {
        const run = await lockRun(trx, input.runId);
        if (!run) return undefined;
        if (run.state === 'running') await finishRunIn(trx, run, input.state, input.error);
        return getRun(trx, input.runId);
      });
    },

    async listAttempts(runId) {
      const rows = await db
        .selectFrom('workflow_attempts')
        .select(['task_id', 'attempt', 'started_at', 'finished_at', 'outcome', 'error', 'owner'])
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
          ...(row.owner !== null ? { owner: row.owner } : {}),
        }),
      );
    },
  };
}
