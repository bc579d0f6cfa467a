import { sql } from 'kysely';
import { changes, first, prepare, rows, type Script, type StoreContext } from '../store-context.js';
import { INTERRUPTED_BY_GONE_RUNNER, type TaskClaims, type WorkflowSteps } from '../sql-workflow-store.js';
import type { TaskClaim } from '../../domain/workflows/workflow-store.js';

/** How many runs a claim passes over when a controller racing it filled them first, before it gives up until the next poll. */
const CLAIM_TRIES = 3;

/** A scope's list as a text[] parameter; null where the scope does not narrow by it. */
const listOrNull = (values: readonly string[] | undefined) => (values === undefined ? null : [...values]);

/**
 * PostgreSQL's task claims: a claim is a lease on the task's row (`claim_owner`, `claim_until`,
 * `claim_id`), renewed by its runner, as on SQLite. A ready task is found with one query, whatever
 * the number of runs and agents: runs in scope in creation order (a partial index on running runs),
 * each with its first ready task (a lateral probe of the pending tasks' index), the run's row locked
 * with SKIP LOCKED. The run is the unit every change of a workflow locks (`lockRun`), so a
 * controller passes over a run another is claiming in or committing to and takes the next one,
 * instead of waiting. Under the run's lock the running count and readiness are read again (the
 * query's snapshot may predate another controller's claim), so max_parallel holds across
 * controllers. A running task whose lease ran out unrenewed, or whose owner is named as gone, is
 * claimed again: its attempt is logged `interrupted` and a new one starts.
 */
export function rowTaskClaims(context: StoreContext): (steps: WorkflowSteps) => TaskClaims {
  const { db } = context;
  const inScope = (p: { runIds: unknown; agentIds: unknown }) =>
    sql<boolean>`(${p.runIds}::text[] IS NULL OR r.run_id = ANY(${p.runIds}::text[])) AND (${p.agentIds}::text[] IS NULL OR r.agent_id = ANY(${p.agentIds}::text[]))`;
  const readyRun = (p: { runIds: unknown; agentIds: unknown; excluded: unknown }) =>
      db
        .selectFrom('workflow_runs as r')
        .innerJoinLateral(
          (eb) =>
            eb
              .selectFrom('workflow_tasks as t')
              .select(['t.task_id'])
              .whereRef('t.run_id', '=', 'r.run_id')
              .where('t.state', '=', 'pending')
              .where(
                sql<boolean>`NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(t.depends_on_json::jsonb) AS d(value) WHERE NOT EXISTS (SELECT 1 FROM workflow_tasks u WHERE u.run_id = t.run_id AND u.task_id = d.value AND u.state = 'committed'))`,
              )
              .orderBy('t.position')
              .limit(1)
              .as('c'),
          (join) => join.onTrue(),
        )
        .select(['r.run_id', 'c.task_id'])
        .where('r.state', '=', 'running')
        .where(inScope(p))
        .where(sql<boolean>`r.run_id <> ALL(${p.excluded}::text[])`)
        .where(sql<boolean>`(SELECT count(*) FROM workflow_tasks x WHERE x.run_id = r.run_id AND x.state = 'running') < r.max_parallel`)
        .orderBy('r.created_at')
        .orderBy(sql`r.seq`)
        .limit(1)
        .forUpdate(['r']);
  const q = {
    abandoned: prepare((p: { runIds: string | null; agentIds: string | null; now: number; gone: string }) =>
      db
        .selectFrom('workflow_tasks as t')
        .innerJoin('workflow_runs as r', 'r.run_id', 't.run_id')
        .select(['t.run_id', 't.task_id'])
        .where('t.state', '=', 'running')
        .where(sql<boolean>`(t.claim_until <= ${p.now} OR t.claim_owner = ANY(${p.gone}::text[]))`)
        .where('r.state', '=', 'running')
        .where(inScope(p))
        .limit(1)
        .forUpdate(['r'])
        .skipLocked(),
    ),
    // Passes over runs another controller is working in; `waitForRun` is the same query waiting for them.
    ready: prepare((p: { runIds: string | null; agentIds: string | null; excluded: string }) => readyRun(p).skipLocked()),
    waitForRun: prepare((p: { runIds: string | null; agentIds: string | null; excluded: string }) => readyRun(p)),
    task: prepare((p: { runId: string; taskId: string }) => db.selectFrom('workflow_tasks').select(['state', 'attempts', 'claim_owner', 'claim_until']).where('run_id', '=', p.runId).where('task_id', '=', p.taskId)),
    start: prepare((p: { attempt: number; owner: string; until: number; claimId: string; runId: string; taskId: string }) =>
      db
        .updateTable('workflow_tasks')
        .set({ state: 'running', attempts: p.attempt, claim_owner: p.owner, claim_until: p.until, claim_id: p.claimId })
        .where('run_id', '=', p.runId)
        .where('task_id', '=', p.taskId),
    ),
    renew: prepare((p: { until: number; owner: string; claimIds: string }) =>
      db
        .updateTable('workflow_tasks')
        .set({ claim_until: p.until })
        .where('claim_owner', '=', p.owner)
        .where('state', '=', 'running')
        .where(sql<boolean>`claim_id = ANY(${p.claimIds}::text[])`)
        .where(({ exists, selectFrom }) => exists(selectFrom('workflow_runs as r').select('r.run_id').whereRef('r.run_id', '=', 'workflow_tasks.run_id').where('r.state', '=', 'running')))
        .returning('claim_id'),
    ),
  };

  return (steps) => {
    function* start(runId: string, taskId: string, agentId: string, attempts: number, owner: string, until: number): Script<TaskClaim> {
      const attempt = attempts + 1;
      // A UUID, as pg-boss's ids were: a controller of schema 5 still running during an upgrade ends
      // the claims of a run it finishes through pg-boss, which takes only UUIDs (an unknown one is a no-op).
      const claimId = context.newId();
      yield* changes(q.start({ attempt, owner, until, claimId, runId, taskId }));
      yield* steps.logAttempt(runId, taskId, attempt, owner);
      return { runId, taskId, agentId, attempt, claimId };
    }

    return {
      async claimTask(input) {
        if (input.runIds?.length === 0 || input.agentIds?.length === 0) return undefined;
        const scope = { runIds: listOrNull(input.runIds) as string | null, agentIds: listOrNull(input.agentIds) as string | null };
        const gone = (input.takeOverFrom ?? []).filter((owner) => owner !== input.owner);
        return context.transaction(function* (): Script<TaskClaim | undefined> {
          const now = context.now().getTime();
          const until = now + input.leaseMs;
          // First an attempt whose runner is gone (its lease ran out, or it is named as gone).
          const abandoned = yield* first(q.abandoned({ ...scope, now, gone: gone as unknown as string }));
          if (abandoned) {
            const run = (yield* steps.lockRun(abandoned.run_id))!;
            const task = (yield* first(q.task({ runId: abandoned.run_id, taskId: abandoned.task_id })))!;
            if (task.state === 'running' && ((task.claim_until !== null && task.claim_until <= now) || (task.claim_owner !== null && gone.includes(task.claim_owner)))) {
              yield* steps.closeAttempts(run.run_id, abandoned.task_id, 'interrupted', INTERRUPTED_BY_GONE_RUNNER);
              return yield* start(run.run_id, abandoned.task_id, run.agent_id, task.attempts, input.owner, until);
            }
          }
          const excluded: string[] = [];
          for (let tries = 0; tries < CLAIM_TRIES; tries++) {
            const parameters = { ...scope, excluded: excluded as unknown as string };
            // Where the only ready work is in runs other controllers hold now, wait for one of them (a
            // run's claims and commits are short, and it may have a task left after theirs), but only
            // while this transaction holds no run's lock: two waiting in opposite orders would deadlock.
            const candidate = (yield* first(q.ready(parameters))) ?? (tries === 0 && !abandoned ? yield* first(q.waitForRun(parameters)) : undefined);
            if (!candidate) return undefined;
            // The run is locked now: what the query's snapshot said is read again.
            const run = (yield* steps.lockRun(candidate.run_id))!;
            const running = (yield* steps.runningTasks(run.run_id)).length;
            const [next] = running < run.max_parallel ? yield* steps.readyTasks(run.run_id, 1) : [];
            if (run.state === 'running' && next) return yield* start(run.run_id, next.task_id, run.agent_id, next.attempts, input.owner, until);
            excluded.push(run.run_id);
          }
          return undefined;
        });
      },

      async renewClaims(input) {
        if (input.claims.length === 0) return [];
        const until = context.now().getTime() + input.leaseMs;
        const held = await context.transaction(() => rows(q.renew({ until, owner: input.owner, claimIds: input.claims.map((claim) => claim.claimId) as unknown as string })));
        const ids = new Set(held.map((row) => row.claim_id));
        return input.claims.filter((claim) => ids.has(claim.claimId));
      },
    };
  };
}
