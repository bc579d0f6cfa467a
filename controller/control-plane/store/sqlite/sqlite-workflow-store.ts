import { ControlPlaneError } from '../../control-plane-error.js';
import type {
  CommitOutcome,
  WorkflowAttemptRecord,
  WorkflowRunRecord,
  WorkflowRunState,
  WorkflowStore,
  WorkflowTaskRecord,
  WorkflowTaskState,
} from '../workflow-store.js';
import type { SqliteStoreContext } from './open-sqlite-store.js';

interface RunRow {
  run_id: string;
  agent_id: string;
  name: string;
  state: WorkflowRunState;
  max_parallel: number;
  error: string | null;
  created_at: string;
  finished_at: string | null;
  owner: string | null;
  lease_until: number | null;
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
}

const taskColumns = `t.run_id, t.task_id, t.prompt, t.result_schema_json, t.depends_on_json, t.max_attempts, t.state,
  t.attempts, t.failed_attempts, t.error, r.result_json`;

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
    ...(row.owner !== null ? { owner: row.owner } : {}),
    ...(row.lease_until !== null ? { leaseUntil: row.lease_until } : {}),
  };
}

/** The workflow part of the SQLite store. Each state change runs in one IMMEDIATE transaction. */
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
    runningCount: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM workflow_runs WHERE agent_id = ? AND state = 'running'"),
    insertRun: db.prepare(
      `INSERT INTO workflow_runs (run_id, agent_id, name, state, max_parallel, created_at, owner, lease_until)
       VALUES (@runId, @agentId, @name, 'running', @maxParallel, @createdAt, @owner, @leaseUntil)`,
    ),
    insertTask: db.prepare(
      `INSERT INTO workflow_tasks (run_id, task_id, position, prompt, result_schema_json, depends_on_json, max_attempts, state)
       VALUES (@runId, @taskId, @position, @prompt, @resultSchemaJson, @dependsOnJson, @maxAttempts, 'pending')`,
    ),
    setTaskState: db.prepare<[WorkflowTaskState, string, string]>('UPDATE workflow_tasks SET state = ? WHERE run_id = ? AND task_id = ?'),
    openAttempts: db.prepare<[string], { task_id: string; attempt: number }>(
      'SELECT task_id, attempt FROM workflow_attempts WHERE run_id = ? AND finished_at IS NULL',
    ),
    closeAttempt: db.prepare<[string, string, string, string, string, number]>(
      'UPDATE workflow_attempts SET finished_at = ?, outcome = ?, error = ? WHERE run_id = ? AND task_id = ? AND attempt = ? AND finished_at IS NULL',
    ),
    setLease: db.prepare<[string, number, string]>("UPDATE workflow_runs SET owner = ?, lease_until = ? WHERE run_id = ? AND state = 'running'"),
  };

  const getRunSync = (runId: string): WorkflowRunRecord | undefined => {
    const row = statements.run.get(runId);
    return row ? toRun(row, statements.tasksOf.all(runId).map(toTask)) : undefined;
  };
  // A read of a run and its tasks sees one snapshot, whatever another process writes meanwhile.
  const readRun = db.transaction(getRunSync);

  /** Running tasks of a run go back to pending; their open attempts are logged `interrupted`. */
  const interruptRunningTasks = (runId: string) => {
    const at = iso();
    for (const open of statements.openAttempts.all(runId)) {
      statements.closeAttempt.run(at, 'interrupted', 'the runner that ran this attempt stopped', runId, open.task_id, open.attempt);
    }
    db.prepare("UPDATE workflow_tasks SET state = 'pending' WHERE run_id = ? AND state = 'running'").run(runId);
  };

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
    statements.insertRun.run({
      runId,
      agentId: input.agentId,
      name: definition.name,
      maxParallel: definition.maxParallel,
      createdAt: iso(),
      owner: input.owner ?? null,
      leaseUntil: input.owner ? context.now().getTime() + (input.leaseMs ?? 0) : null,
    });
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

  const claimRuns = db.transaction((input: Parameters<WorkflowStore['claimRuns']>[0]): string[] => {
    const nowMs = context.now().getTime();
    const takeOver = input.takeOverFrom ?? [];
    const candidates = input.runId
      ? db.prepare<[string], RunRow>("SELECT * FROM workflow_runs WHERE run_id = ? AND state = 'running'").all(input.runId)
      : db.prepare<[], RunRow>("SELECT * FROM workflow_runs WHERE state = 'running' ORDER BY created_at").all();
    const claimed: string[] = [];
    for (const row of candidates) {
      // The runner already runs the runs it holds; a claim is for runs someone else left.
      if (row.owner === input.owner) continue;
      const free = row.owner === null || row.lease_until === null || row.lease_until <= nowMs || takeOver.includes(row.owner);
      if (!free) continue;
      interruptRunningTasks(row.run_id);
      statements.setLease.run(input.owner, nowMs + input.leaseMs, row.run_id);
      claimed.push(row.run_id);
    }
    return claimed;
  });

  const renewLeases = db.transaction((input: Parameters<WorkflowStore['renewLeases']>[0]): string[] => {
    const until = context.now().getTime() + input.leaseMs;
    const held: string[] = [];
    const renew = db.prepare<[number, string, string]>("UPDATE workflow_runs SET lease_until = ? WHERE run_id = ? AND owner = ? AND state = 'running'");
    for (const runId of input.runIds) if (renew.run(until, runId, input.owner).changes === 1) held.push(runId);
    return held;
  });

  const startAttempt = db.transaction((input: { runId: string; taskId: string }): number | undefined => {
    const run = statements.run.get(input.runId);
    const task = statements.task.get(input.runId, input.taskId);
    if (!run || run.state !== 'running' || !task || task.state !== 'pending') return undefined;
    const attempt = task.attempts + 1;
    db.prepare("UPDATE workflow_tasks SET state = 'running', attempts = ? WHERE run_id = ? AND task_id = ?").run(attempt, input.runId, input.taskId);
    db.prepare('INSERT INTO workflow_attempts (run_id, task_id, attempt, started_at) VALUES (?, ?, ?, ?)').run(input.runId, input.taskId, attempt, iso());
    return attempt;
  });

  const endAttempt = db.transaction((input: Parameters<WorkflowStore['endAttempt']>[0]): WorkflowTaskState | undefined => {
    const task = statements.task.get(input.runId, input.taskId);
    if (!task) return undefined;
    const closed = statements.closeAttempt.run(iso(), input.outcome, input.error, input.runId, input.taskId, input.attempt).changes === 1;
    if (!closed || task.state !== 'running' || task.attempts !== input.attempt) return task.state;
    const failed = task.failed_attempts + (input.outcome === 'failed' ? 1 : 0);
    const state: WorkflowTaskState = failed >= task.max_attempts ? 'failed' : 'pending';
    db.prepare('UPDATE workflow_tasks SET state = ?, failed_attempts = ?, error = ? WHERE run_id = ? AND task_id = ?').run(
      state,
      failed,
      input.error,
      input.runId,
      input.taskId,
    );
    return state;
  });

  const commitResult = db.transaction((input: Parameters<WorkflowStore['commitResult']>[0]): CommitOutcome => {
    const run = statements.run.get(input.runId);
    if (!run || run.state !== 'running') return { committed: false, reason: 'not_running' };
    const inserted = db
      .prepare('INSERT INTO workflow_results (run_id, task_id, attempt, result_json, committed_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING')
      .run(input.runId, input.taskId, input.attempt, input.resultJson, iso());
    if (inserted.changes === 0) return { committed: false, reason: 'already_committed' };
    statements.setTaskState.run('committed', input.runId, input.taskId);
    db.prepare('UPDATE workflow_tasks SET error = NULL WHERE run_id = ? AND task_id = ?').run(input.runId, input.taskId);
    statements.closeAttempt.run(iso(), 'committed', '', input.runId, input.taskId, input.attempt);
    return { committed: true };
  });

  const finishRun = db.transaction((input: Parameters<WorkflowStore['finishRun']>[0]): WorkflowRunRecord | undefined => {
    const run = statements.run.get(input.runId);
    if (!run) return undefined;
    if (run.state === 'running') {
      const at = iso();
      for (const open of statements.openAttempts.all(input.runId)) {
        statements.closeAttempt.run(at, 'cancelled', input.error ?? `the run ${input.state}`, input.runId, open.task_id, open.attempt);
      }
      db.prepare("UPDATE workflow_tasks SET state = 'skipped' WHERE run_id = ? AND state = 'pending'").run(input.runId);
      db.prepare("UPDATE workflow_tasks SET state = 'cancelled' WHERE run_id = ? AND state = 'running'").run(input.runId);
      db.prepare('UPDATE workflow_runs SET state = ?, error = ?, finished_at = ?, owner = NULL, lease_until = NULL WHERE run_id = ?').run(
        input.state,
        input.error ?? null,
        at,
        input.runId,
      );
    }
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
    async claimRuns(input) {
      return claimRuns.immediate(input);
    },
    async renewLeases(input) {
      return renewLeases.immediate(input);
    },
    async releaseRun(input) {
      db.prepare('UPDATE workflow_runs SET owner = NULL, lease_until = NULL WHERE run_id = ? AND owner = ?').run(input.runId, input.owner);
    },
    async startAttempt(input) {
      return startAttempt.immediate(input);
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
        .prepare<[string], { task_id: string; attempt: number; started_at: string; finished_at: string | null; outcome: WorkflowAttemptRecord['outcome'] | null; error: string | null }>(
          'SELECT task_id, attempt, started_at, finished_at, outcome, error FROM workflow_attempts WHERE run_id = ? ORDER BY rowid',
        )
        .all(runId);
      return rows.map((row) => ({
        taskId: row.task_id,
        attempt: row.attempt,
        startedAt: row.started_at,
        ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
        ...(row.outcome !== null ? { outcome: row.outcome } : {}),
        ...(row.error !== null && row.error !== '' ? { error: row.error } : {}),
      }));
    },
  };
}
