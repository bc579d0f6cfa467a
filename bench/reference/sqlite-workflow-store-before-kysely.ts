// The SQLite workflow store as it was before the store was written once against Kysely, frozen
// here as the reference of the `SQLite store:` rows of `npm run bench -- workflows`. Not used by the
// program; only its imports follow the tree.
import type Database from 'better-sqlite3';
import { ControlPlaneError } from '../../controller/control-plane/domain/control-plane-error.js';
import type {
  AttemptSettled,
  CommitOutcome,
  TaskClaim,
  WorkflowAttemptRecord,
  WorkflowRunRecord,
  WorkflowRunState,
  WorkflowStore,
  WorkflowTaskRecord,
  WorkflowTaskState,
} from '../../controller/control-plane/domain/workflows/workflow-store.js';
import { INTERRUPTED_BY_GONE_RUNNER, taskFailedError } from '../../controller/control-plane/store/sql-workflow-store.js';

interface SqliteStoreContext {
  db: Database.Database;
  now: () => Date;
  newId: () => string;
}

interface RunRow {
  run_id: string;
  agent_id: string;
  name: string;
  state: WorkflowRunState;
  max_parallel: number;
  error: string | null;
  created_at: string;
  finished_at: string | null;
}

interface TaskRow {
  run_id: string;
  task_id: string;
  prompt: string;
  result_schema_json: string;
  depends_on_json: string;
  max_attempts: number;
  state: WorkflowTaskState;
  attempts: number;
  failed_attempts: number;
  error: string | null;
  result_json: string | null;
  claim_owner: string | null;
  claim_until: number | null;
  claim_id: string | null;
}

const taskColumns = `t.run_id, t.task_id, t.prompt, t.result_schema_json, t.depends_on_json, t.max_attempts, t.state,
  t.attempts, t.failed_attempts, t.error, r.result_json, t.claim_owner, t.claim_until, t.claim_id`;

function toTask(row: TaskRow): WorkflowTaskRecord {
  return {
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
  };
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
 * The workflow part of the SQLite store. Each state change runs in one IMMEDIATE transaction. A
 * claim is a lease on the task's row (`claim_owner`, `claim_until`), renewed by its runner; a task
 * whose lease ran out, or whose owner is named as gone, is claimed again by the next runner.
 */
export function createSqliteWorkflowStore(context: SqliteStoreContext): WorkflowStore {
  const { db } = context;
  const iso = () => context.now().toISOString();
  const statements = {
    run: db.prepare<[string], RunRow>('SELECT * FROM workflow_runs WHERE run_id = ?'),
    tasksOf: db.prepare<[string], TaskRow>(
      `SELECT ${taskColumns} FROM workflow_tasks t LEFT JOIN workflow_results r ON r.run_id = t.run_id AND r.task_id = t.task_id
       WHERE t.run_id = ? ORDER BY t.position`,
    ),
    task: db.prepare<[string, string], TaskRow>(
      `SELECT ${taskColumns} FROM workflow_tasks t LEFT JOIN workflow_results r ON r.run_id = t.run_id AND r.task_id = t.task_id
       WHERE t.run_id = ? AND t.task_id = ?`,
    ),
    runningTasks: db.prepare<[string], Pick<TaskRow, 'task_id' | 'claim_owner' | 'claim_until'>>(
      "SELECT task_id, claim_owner, claim_until FROM workflow_tasks WHERE run_id = ? AND state = 'running'",
    ),
    // The first pending task (in definition order) none of whose dependencies is uncommitted.
    nextReady: db.prepare<[string], Pick<TaskRow, 'task_id' | 'attempts'>>(
      `SELECT t.task_id, t.attempts FROM workflow_tasks t
       WHERE t.run_id = ? AND t.state = 'pending' AND NOT EXISTS (
         SELECT 1 FROM json_each(t.depends_on_json) d CROSS JOIN workflow_tasks u ON u.run_id = t.run_id AND u.task_id = d.value WHERE u.state != 'committed')
       ORDER BY t.position LIMIT 1`,
    ),
    uncommitted: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM workflow_tasks WHERE run_id = ? AND state != 'committed'"),
    runningCount: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM workflow_runs WHERE agent_id = ? AND state = 'running'"),
    insertRun: db.prepare(
      `INSERT INTO workflow_runs (run_id, agent_id, name, state, max_parallel, created_at)
       VALUES (@runId, @agentId, @name, 'running', @maxParallel, @createdAt)`,
    ),
    insertTask: db.prepare(
      `INSERT INTO workflow_tasks (run_id, task_id, position, prompt, result_schema_json, depends_on_json, max_attempts, state)
       VALUES (@runId, @taskId, @position, @prompt, @resultSchemaJson, @dependsOnJson, @maxAttempts, 'pending')`,
    ),
    openAttempts: db.prepare<[string], { task_id: string; attempt: number }>(
      'SELECT task_id, attempt FROM workflow_attempts WHERE run_id = ? AND finished_at IS NULL',
    ),
    closeAttempt: db.prepare<[string, string, string, string, string, number]>(
      'UPDATE workflow_attempts SET finished_at = ?, outcome = ?, error = ? WHERE run_id = ? AND task_id = ? AND attempt = ? AND finished_at IS NULL',
    ),
    closeOtherAttempts: db.prepare<[string, string, string, string, string]>(
      'UPDATE workflow_attempts SET finished_at = ?, outcome = ?, error = ? WHERE run_id = ? AND task_id = ? AND finished_at IS NULL',
    ),
    startAttempt: db.prepare<[number, string, number, string, string, string, string]>(
      "UPDATE workflow_tasks SET state = 'running', attempts = ?, claim_owner = ?, claim_until = ?, claim_id = ? WHERE run_id = ? AND task_id = ? AND state = ?",
    ),
    logAttempt: db.prepare<[string, string, number, string, string]>('INSERT INTO workflow_attempts (run_id, task_id, attempt, started_at, owner) VALUES (?, ?, ?, ?, ?)'),
    endTask: db.prepare<[WorkflowTaskState, number, string, string, string]>(
      'UPDATE workflow_tasks SET state = ?, failed_attempts = ?, error = ?, claim_owner = NULL, claim_until = NULL, claim_id = NULL WHERE run_id = ? AND task_id = ?',
    ),
    insertResult: db.prepare<[string, string, number, string, string]>(
      'INSERT INTO workflow_results (run_id, task_id, attempt, result_json, committed_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
    ),
    commitTask: db.prepare<[string, string]>(
      "UPDATE workflow_tasks SET state = 'committed', error = NULL, claim_owner = NULL, claim_until = NULL, claim_id = NULL WHERE run_id = ? AND task_id = ?",
    ),
    releaseTask: db.prepare<[string, string]>("UPDATE workflow_tasks SET state = 'pending', claim_owner = NULL, claim_until = NULL, claim_id = NULL WHERE run_id = ? AND task_id = ?"),
    renew: db.prepare<[number, string, string, number, string, string]>(
      `UPDATE workflow_tasks SET claim_until = ?
       WHERE run_id = ? AND task_id = ? AND attempts = ? AND claim_owner = ? AND claim_id = ? AND state = 'running'
         AND EXISTS (SELECT 1 FROM workflow_runs r WHERE r.run_id = workflow_tasks.run_id AND r.state = 'running')`,
    ),
  };

  const getRunSync = (runId: string): WorkflowRunRecord | undefined => {
    const row = statements.run.get(runId);
    return row ? toRun(row, statements.tasksOf.all(runId).map(toTask)) : undefined;
  };
  // A read of a run and its tasks sees one snapshot, whatever another process writes meanwhile.
  const readRun = db.transaction(getRunSync);

  const createRun = db.transaction((input: Parameters<WorkflowStore['createRun']>[0]): WorkflowRunRecord => {
    const running = statements.runningCount.get(input.agentId)?.n ?? 0;
    if (running >= input.maxRunningPerAgent) {
      throw new ControlPlaneError(
        'limit_exceeded',
        `this agent already has ${running} running workflows (the limit is ${input.maxRunningPerAgent}); wait for one to finish or cancel one with workflow_cancel`,
      );
    }
    const runId = context.newId();
    const { definition } = input;
    statements.insertRun.run({ runId, agentId: input.agentId, name: definition.name, maxParallel: definition.maxParallel, createdAt: iso() });
    definition.tasks.forEach((task, position) => {
      statements.insertTask.run({
        runId,
        taskId: task.id,
        position,
        prompt: task.prompt,
        resultSchemaJson: JSON.stringify(task.resultSchema),
        dependsOnJson: JSON.stringify(task.dependsOn),
        maxAttempts: task.maxAttempts,
      });
    });
    return getRunSync(runId)!;
  });

  const claimTask = db.transaction((input: Parameters<WorkflowStore['claimTask']>[0]): TaskClaim | undefined => {
    const nowMs = context.now().getTime();
    const gone = new Set(input.takeOverFrom ?? []);
    const where = ["state = 'running'"];
    const params: string[] = [];
    for (const [column, values] of [['run_id', input.runIds], ['agent_id', input.agentIds]] as const) {
      if (values === undefined) continue;
      if (values.length === 0) return undefined;
      where.push(`${column} IN (${values.map(() => '?').join(', ')})`);
      params.push(...values);
    }
    const runs = db.prepare<string[], RunRow>(`SELECT * FROM workflow_runs WHERE ${where.join(' AND ')} ORDER BY created_at, rowid`).all(...params);
    for (const run of runs) {
      let running = 0;
      // Attempts whose runner is gone (lease ran out, or named as gone) are interrupted first.
      for (const task of statements.runningTasks.all(run.run_id)) {
        const abandoned = task.claim_owner === null || task.claim_until === null || task.claim_until <= nowMs || gone.has(task.claim_owner);
        if (!abandoned || task.claim_owner === input.owner) {
          running++;
          continue;
        }
        statements.closeOtherAttempts.run(iso(), 'interrupted', INTERRUPTED_BY_GONE_RUNNER, run.run_id, task.task_id);
        statements.releaseTask.run(run.run_id, task.task_id);
      }
      if (running >= run.max_parallel) continue;
      const next = statements.nextReady.get(run.run_id);
      if (!next) continue;
      const attempt = next.attempts + 1;
      const claimId = `${run.run_id}/${next.task_id}/${attempt}`;
      statements.startAttempt.run(attempt, input.owner, nowMs + input.leaseMs, claimId, run.run_id, next.task_id, 'pending');
      statements.logAttempt.run(run.run_id, next.task_id, attempt, iso(), input.owner);
      return { runId: run.run_id, taskId: next.task_id, agentId: run.agent_id, attempt, claimId };
    }
    return undefined;
  });

  const renewClaims = db.transaction((input: Parameters<WorkflowStore['renewClaims']>[0]): TaskClaim[] => {
    const until = context.now().getTime() + input.leaseMs;
    return input.claims.filter((claim) => statements.renew.run(until, claim.runId, claim.taskId, claim.attempt, input.owner, claim.claimId).changes === 1);
  });

  /** Ends a running run in the current transaction (see `finishRun`). */
  const finishRunSync = (runId: string, state: Exclude<WorkflowRunState, 'running'>, error: string | undefined) => {
    const at = iso();
    for (const open of statements.openAttempts.all(runId)) {
      statements.closeAttempt.run(at, 'cancelled', error ?? `the run ${state}`, runId, open.task_id, open.attempt);
    }
    db.prepare("UPDATE workflow_tasks SET state = 'skipped' WHERE run_id = ? AND state = 'pending'").run(runId);
    db.prepare("UPDATE workflow_tasks SET state = 'cancelled' WHERE run_id = ? AND state = 'running'").run(runId);
    db.prepare('UPDATE workflow_tasks SET claim_owner = NULL, claim_until = NULL, claim_id = NULL WHERE run_id = ?').run(runId);
    db.prepare('UPDATE workflow_runs SET state = ?, error = ?, finished_at = ? WHERE run_id = ?').run(state, error ?? null, at, runId);
  };

  const settled = (runId: string, taskState: WorkflowTaskState | undefined): AttemptSettled => {
    const run = statements.run.get(runId);
    return { taskState, runState: run?.state, ...(run && run.state !== 'running' && run.error !== null ? { runError: run.error } : {}) };
  };

  const endAttempt = db.transaction((input: Parameters<WorkflowStore['endAttempt']>[0]): AttemptSettled => {
    const task = statements.task.get(input.runId, input.taskId);
    if (!task) return settled(input.runId, undefined);
    const closed = statements.closeAttempt.run(iso(), input.outcome, input.error, input.runId, input.taskId, input.attempt).changes === 1;
    if (!closed || task.state !== 'running' || task.attempts !== input.attempt) return settled(input.runId, task.state);
    const failed = task.failed_attempts + (input.outcome === 'failed' ? 1 : 0);
    const state: WorkflowTaskState = failed >= task.max_attempts ? 'failed' : 'pending';
    statements.endTask.run(state, failed, input.error, input.runId, input.taskId);
    if (state === 'failed') finishRunSync(input.runId, 'failed', taskFailedError(input.taskId, failed, input.error));
    return settled(input.runId, state);
  });

  const commitResult = db.transaction((input: Parameters<WorkflowStore['commitResult']>[0]): CommitOutcome => {
    const run = statements.run.get(input.runId);
    if (!run || run.state !== 'running') return { committed: false, reason: 'not_running', runState: run?.state, ...(run?.error ? { runError: run.error } : {}) };
    const inserted = statements.insertResult.run(input.runId, input.taskId, input.attempt, input.resultJson, iso());
    if (inserted.changes === 0) return { committed: false, reason: 'already_committed', runState: run.state };
    statements.commitTask.run(input.runId, input.taskId);
    statements.closeAttempt.run(iso(), 'committed', '', input.runId, input.taskId, input.attempt);
    // An attempt of another runner that took the task over meanwhile has nothing left to do.
    statements.closeOtherAttempts.run(iso(), 'cancelled', 'another attempt committed the task first', input.runId, input.taskId);
    if ((statements.uncommitted.get(input.runId)?.n ?? 1) === 0) finishRunSync(input.runId, 'succeeded', undefined);
    return { committed: true, ...settled(input.runId, 'committed') };
  });

  const finishRun = db.transaction((input: Parameters<WorkflowStore['finishRun']>[0]): WorkflowRunRecord | undefined => {
    const run = statements.run.get(input.runId);
    if (!run) return undefined;
    if (run.state === 'running') finishRunSync(input.runId, input.state, input.error);
    return getRunSync(input.runId);
  });

  return {
    async createRun(input) {
      return createRun.immediate(input);
    },
    async getRun(runId) {
      return readRun(runId);
    },
    async listRuns(query) {
      const where: string[] = [];
      const params: Array<string | number> = [];
      if (query.agentId !== undefined) {
        where.push('agent_id = ?');
        params.push(query.agentId);
      }
      if (query.state !== undefined) {
        where.push('state = ?');
        params.push(query.state);
      }
      const sql = `SELECT * FROM workflow_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, rowid DESC LIMIT ?`;
      const list = db.transaction(() => db.prepare<Array<string | number>, RunRow>(sql).all(...params, query.limit).map((row) => toRun(row, statements.tasksOf.all(row.run_id).map(toTask))));
      return list();
    },
    async claimTask(input) {
      return claimTask.immediate(input);
    },
    async renewClaims(input) {
      return input.claims.length === 0 ? [] : renewClaims.immediate(input);
    },
    async claimOwners() {
      return db
        .prepare<[], { claim_owner: string }>("SELECT DISTINCT claim_owner FROM workflow_tasks WHERE state = 'running' AND claim_owner IS NOT NULL")
        .all()
        .map((row) => row.claim_owner);
    },
    async endAttempt(input) {
      return endAttempt.immediate(input);
    },
    async commitResult(input) {
      return commitResult.immediate(input);
    },
    async finishRun(input) {
      return finishRun.immediate(input);
    },
    async listAttempts(runId) {
      const rows = db
        .prepare<
          [string],
          { task_id: string; attempt: number; started_at: string; finished_at: string | null; outcome: WorkflowAttemptRecord['outcome'] | null; error: string | null; owner: string | null }
        >('SELECT task_id, attempt, started_at, finished_at, outcome, error, owner FROM workflow_attempts WHERE run_id = ? ORDER BY rowid')
        .all(runId);
      return rows.map((row) => ({
        taskId: row.task_id,
        attempt: row.attempt,
        startedAt: row.started_at,
        ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
        ...(row.outcome !== null ? { outcome: row.outcome } : {}),
        ...(row.error !== null && row.error !== '' ? { error: row.error } : {}),
        ...(row.owner !== null ? { owner: row.owner } : {}),
      }));
    },
  };
}
