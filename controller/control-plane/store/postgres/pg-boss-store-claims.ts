import { changes, effect, first, rows, type Script, type StoreContext } from '../store-context.js';
import type { JobClaims, JobRow } from '../sql-job-store.js';
import { lockAgentJobs } from '../sql-job-store.js';
import { INTERRUPTED_BY_GONE_RUNNER, type RunRow, type TaskClaims, type WorkflowSteps } from '../sql-workflow-store.js';
import type { TaskClaim, TaskClaimScope } from '../../domain/workflows/workflow-store.js';
import { JOB_TURN_QUEUE, TASK_ATTEMPT_QUEUE, type JobTurnClaim, type PgBossClaims, type QueuedJob } from './pg-boss-claims.js';

/** How many pg-boss jobs one claim looks at before it gives up for now. */
const FETCHES_PER_CLAIM = 16;

function inScope(run: RunRow, scope: TaskClaimScope): boolean {
  return (scope.runIds === undefined || scope.runIds.includes(run.run_id)) && (scope.agentIds === undefined || scope.agentIds.includes(run.agent_id));
}

/**
 * Fetches pg-boss jobs one at a time and hands each to `take`, which records the claim in a
 * transaction: the first it takes is returned. Jobs it leaves (not this controller's, or not now)
 * are handed back after the loop, so this call does not fetch them again; a job whose recording
 * transaction failed is handed back too, or it would stay claimed by nobody until pg-boss expired it.
 */
async function fetchLoop<J extends QueuedJob, T>(fetch: () => Promise<J | undefined>, take: (job: J) => Promise<T | 'done' | 'not-here'>, done: (job: J) => Promise<void>, claims: PgBossClaims): Promise<T | undefined> {
  const notHere: J[] = [];
  try {
    for (let fetches = 0; fetches < FETCHES_PER_CLAIM; fetches++) {
      const job = await fetch();
      if (!job) return undefined;
      const taken = await take(job).catch((error: unknown) => {
        notHere.push(job);
        throw error;
      });
      if (taken === 'done') await done(job);
      else if (taken === 'not-here') notHere.push(job);
      else return taken;
    }
    return undefined;
  } finally {
    await claims.handBack(notHere);
  }
}

/**
 * PostgreSQL's task claims: every queued attempt is a pg-boss job on its agent's queue, sent by the
 * transaction that made its task ready (never more than max_parallel of a run queued or running),
 * fetched with SKIP LOCKED by whichever controller asks first, ended in the transaction that ends the
 * attempt, and expired by pg-boss when its controller dies: the next controller to fetch it logs the
 * old attempt `interrupted` and runs a new one. A claim cannot be renewed: it lasts `lifetimeMs`.
 */
export function pgBossTaskClaims(context: StoreContext, claims: PgBossClaims): (steps: WorkflowSteps) => TaskClaims {
  const { db } = context;
  /** The agents of these runs, or (none given) of every running run. */
  const agentsOf = async (runIds?: readonly string[]) => {
    const runs = db.selectFrom('workflow_runs').select('agent_id').distinct();
    const found = await context.read(() => rows(runIds ? runs.where('run_id', 'in', [...runIds]) : runs.where('state', '=', 'running')));
    return found.map((row) => row.agent_id);
  };

  return (steps) => {
    const endClaims = (agentId: string, claimIds: string[]) => effect((trx) => claims.endTasks(trx, agentId, claimIds));
    const setClaim = (runId: string, taskId: string, claimId: string | null) =>
      changes(db.updateTable('workflow_tasks').set({ claim_id: claimId, claim_owner: null }).where('run_id', '=', runId).where('task_id', '=', taskId));

    function* offer(run: RunRow): Script<void> {
      // Queued (pending with a claim) or running: the run's slots taken.
      const { n: busy } = (yield* first(
        db
          .selectFrom('workflow_tasks')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('run_id', '=', run.run_id)
          .where((eb) => eb.or([eb('state', '=', 'running'), eb.and([eb('state', '=', 'pending'), eb('claim_id', 'is not', null)])])),
      ))!;
      if (busy >= run.max_parallel) return;
      for (const task of yield* steps.readyTasks(run.run_id, run.max_parallel - busy)) {
        const claimId = yield* effect((trx) => claims.enqueueTask(trx, { agentId: run.agent_id, runId: run.run_id, taskId: task.task_id }));
        yield* setClaim(run.run_id, task.task_id, claimId);
      }
    }

    /** Running tasks of runs in scope whose owner is named as gone: their attempts are interrupted and queued again. */
    const takeOver = (scope: TaskClaimScope, gone: readonly string[]) =>
      context.transaction(function* () {
        const runIds = yield* rows(
          db
            .selectFrom('workflow_tasks as t')
            .innerJoin('workflow_runs as r', 'r.run_id', 't.run_id')
            .select('t.run_id')
            .distinct()
            .where('t.state', '=', 'running')
            .where('r.state', '=', 'running')
            .where('t.claim_owner', 'in', gone),
        );
        for (const { run_id: runId } of runIds) {
          const run = yield* steps.lockRun(runId);
          if (!run || run.state !== 'running' || !inScope(run, scope)) continue;
          for (const task of yield* steps.runningTasks(runId)) {
            if (task.claim_owner === null || !gone.includes(task.claim_owner)) continue;
            yield* steps.closeAttempts(runId, task.task_id, 'interrupted', INTERRUPTED_BY_GONE_RUNNER);
            if (task.claim_id !== null) yield* endClaims(run.agent_id, [task.claim_id]);
            yield* steps.releaseTask(runId, task.task_id);
          }
          yield* offer(run);
        }
      });

    /**
     * Moves task attempts an earlier version queued on the one shared queue to their agents' queues
     * (a few per claim, so a controller's first claims after an upgrade drain it).
     */
    const moveLegacyTasks = async () => {
      for (let moves = 0; moves < FETCHES_PER_CLAIM; moves++) {
        const old = await claims.fetchLegacy<{ runId: string; taskId: string }>(TASK_ATTEMPT_QUEUE);
        if (!old) return;
        try {
          await claims.ensureAgents(await agentsOf([old.data.runId]));
          await context.transaction(function* () {
            const run = yield* steps.lockRun(old.data.runId);
            const task = yield* first(db.selectFrom('workflow_tasks').select(['state', 'claim_id']).where('run_id', '=', old.data.runId).where('task_id', '=', old.data.taskId));
            if (run && run.state === 'running' && task && task.claim_id === old.id && (task.state === 'pending' || task.state === 'running')) {
              const claimId = yield* effect((trx) => claims.enqueueTask(trx, { agentId: run.agent_id, runId: run.run_id, taskId: old.data.taskId }));
              yield* changes(db.updateTable('workflow_tasks').set({ claim_id: claimId }).where('run_id', '=', run.run_id).where('task_id', '=', old.data.taskId));
            }
            yield* effect((trx) => claims.complete(old, trx));
          });
        } catch (error) {
          await claims.handBack([old]).catch(() => undefined);
          throw error;
        }
      }
    };

    return {
      lifetimeMs: claims.expireInSeconds * 1000,
      ensureAgents: (agentIds) => claims.ensureAgents(agentIds),
      offer,
      *endTask(run, taskId) {
        const task = yield* first(db.selectFrom('workflow_tasks').select('claim_id').where('run_id', '=', run.run_id).where('task_id', '=', taskId));
        if (task?.claim_id) yield* endClaims(run.agent_id, [task.claim_id]);
      },
      *endRun(run) {
        const held = yield* rows(db.selectFrom('workflow_tasks').select('claim_id').where('run_id', '=', run.run_id).where('claim_id', 'is not', null));
        yield* endClaims(
          run.agent_id,
          held.map((row) => row.claim_id!),
        );
      },

      async claimTask(input) {
        if (input.runIds?.length === 0 || input.agentIds?.length === 0) return undefined;
        const gone = (input.takeOverFrom ?? []).filter((owner) => owner !== input.owner);
        if (gone.length > 0) await takeOver(input, gone);
        // Only the queues of the agents in scope: a runner never fetches work it would hand back.
        const agents = input.agentIds ?? (await agentsOf(input.runIds));
        if (agents.length === 0) return undefined;
        await moveLegacyTasks();
        return fetchLoop(
          () => claims.fetchTask(agents),
          (job) =>
            context.transaction(function* (): Script<TaskClaim | 'done' | 'not-here'> {
              const run = yield* steps.lockRun(job.runId);
              const task = yield* first(db.selectFrom('workflow_tasks').select(['state', 'attempts', 'claim_id']).where('run_id', '=', job.runId).where('task_id', '=', job.taskId));
              // The run ended, the task moved on, or this job is not the task's claim any more: nothing to run.
              if (!run || run.state !== 'running' || !task || task.claim_id !== job.id || (task.state !== 'pending' && task.state !== 'running')) return 'done';
              if (!inScope(run, input)) return 'not-here';
              // A running task's job offered again: pg-boss expired the claim of the runner that ran it.
              if (task.state === 'running') yield* steps.closeAttempts(run.run_id, job.taskId, 'interrupted', INTERRUPTED_BY_GONE_RUNNER);
              const attempt = task.attempts + 1;
              yield* changes(db.updateTable('workflow_tasks').set({ state: 'running', attempts: attempt, claim_owner: input.owner }).where('run_id', '=', run.run_id).where('task_id', '=', job.taskId));
              yield* steps.logAttempt(run.run_id, job.taskId, attempt, input.owner);
              return { runId: run.run_id, taskId: job.taskId, agentId: run.agent_id, attempt, claimId: job.id };
            }),
          (job) => claims.complete(job),
          claims,
        );
      },

      async renewClaims(input) {
        if (input.claims.length === 0) return [];
        // pg-boss's claims do not extend: a claim only lasts `--claim-expiry-s`; this reports which still hold.
        const held = await context.read(() =>
          rows(
            db
              .selectFrom('workflow_tasks as t')
              .innerJoin('workflow_runs as r', 'r.run_id', 't.run_id')
              .select(['t.run_id', 't.task_id', 't.attempts', 't.claim_id'])
              .where('t.claim_owner', '=', input.owner)
              .where('t.state', '=', 'running')
              .where('r.state', '=', 'running')
              .where('t.run_id', 'in', [...new Set(input.claims.map((claim) => claim.runId))]),
          ),
        );
        const key = (runId: string, taskId: string, attempt: number, claimId: string | null) => `${runId}\u0000${taskId}\u0000${attempt}\u0000${claimId}`;
        const keys = new Set(held.map((row) => key(row.run_id, row.task_id, row.attempts, row.claim_id)));
        return input.claims.filter((claim) => keys.has(key(claim.runId, claim.taskId, claim.attempt, claim.claimId)));
      },
    };
  };
}

/**
 * PostgreSQL's job claims: a queued job's turn is a pg-boss job on its agent's queue (sent in the
 * transaction that inserts the job), claimed with SKIP LOCKED by whichever controller asks first,
 * completed when its turn is recorded, handed back at close, and expired by pg-boss when a
 * controller dies holding it.
 */
export function pgBossJobClaims(context: StoreContext, claims: PgBossClaims): JobClaims {
  const { db } = context;
  /** The claims this process holds, by job id. */
  const held = new Map<string, QueuedJob>();

  /** Moves job turns an earlier version queued on the one shared queue to their agents' queues. */
  const moveLegacyTurns = async () => {
    for (let moves = 0; moves < FETCHES_PER_CLAIM; moves++) {
      const old = await claims.fetchLegacy<{ jobId: string }>(JOB_TURN_QUEUE);
      if (!old) return;
      try {
        const agent = await context.read(() => first(db.selectFrom('jobs').select('agent_id').where('job_id', '=', old.data.jobId)));
        if (agent) await claims.ensureAgents([agent.agent_id]);
        await context.transaction(function* () {
          const row = yield* first(db.selectFrom('jobs').select(['agent_id', 'status']).where('job_id', '=', old.data.jobId).forUpdate());
          // A turn already queued on the agent's queue under this key needs no second one (send says false).
          if (row && (row.status === 'queued' || row.status === 'running')) yield* effect((trx) => claims.enqueue(trx, { agentId: row.agent_id, jobId: old.data.jobId, singletonKey: `job:${old.data.jobId}` }));
          yield* effect((trx) => claims.complete(old, trx));
        });
      } catch (error) {
        await claims.handBack([old]).catch(() => undefined);
        throw error;
      }
    }
  };

  return {
    ensureAgents: (agentIds) => claims.ensureAgents(agentIds),
    *queued(job, singletonKey) {
      const sent = yield* effect((trx) => claims.enqueue(trx, { agentId: job.agentId, jobId: job.jobId, singletonKey }));
      if (!sent) throw new Error(`the turn of ${singletonKey} is already queued`);
    },

    async claimNext({ agentIds, maxRunningPerAgent, now, owner }) {
      if (agentIds.length === 0) return undefined;
      const agents = new Set(agentIds);
      // Only the queues of this controller's agents: it never fetches a turn it would hand back.
      await moveLegacyTurns();
      return fetchLoop<JobTurnClaim, JobRow>(
        () => claims.fetch(agentIds),
        async (claim) => {
          const taken = await context.transaction(function* (): Script<JobRow | 'done' | 'not-here'> {
            const row = yield* first(db.selectFrom('jobs').selectAll().where('job_id', '=', claim.jobId).forUpdate());
            // Finished or cancelled meanwhile (or deleted): the turn is not needed any more.
            if (!row || (row.status !== 'queued' && row.status !== 'running')) return 'done';
            if (!agents.has(row.agent_id)) return 'not-here';
            // A `running` row claimed again is one whose controller died: its claim expired.
            yield* lockAgentJobs(context, row.agent_id);
            const { n } = (yield* first(
              db
                .selectFrom('jobs')
                .select((eb) => eb.fn.countAll<number>().as('n'))
                .where('agent_id', '=', row.agent_id)
                .where('status', '=', 'running')
                .where('job_id', '!=', row.job_id),
            ))!;
            if (n >= maxRunningPerAgent) return 'not-here';
            return (yield* first(
              db
                .updateTable('jobs')
                .set((eb) => ({ status: 'running', attempts: eb('attempts', '+', 1), started_at: now, owner }))
                .where('job_id', '=', row.job_id)
                .returningAll(),
            ))!;
          });
          if (typeof taken === 'object') held.set(taken.job_id, claim);
          return taken;
        },
        (claim) => claims.complete(claim),
        claims,
      );
    },

    async finished(jobId) {
      const claim = held.get(jobId);
      if (claim === undefined) return;
      held.delete(jobId);
      await claims.complete(claim);
    },

    async close() {
      // Claims still held (turns a shutdown interrupted) go back to pg-boss for another controller.
      const ids = [...held.values()];
      held.clear();
      await claims.handBack(ids);
    },
  };
}
