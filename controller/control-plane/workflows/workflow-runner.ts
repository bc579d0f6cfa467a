import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { compileJsonSchema, errorMessage, silentLogger, ToolRuntimeError, type Logger } from '../../../src/index.js';
import { runTaskTurn, type TaskTurnOutcome } from '../../loop/run-task-turn.js';
import type { RunTurnOptions } from '../../loop/run-turn.js';
import type { TurnEvent } from '../../loop/turn-events.js';
import type { ResponsesModel } from '../../model/responses-model.js';
import type { WorkflowRunnerHook } from '../answer-control-request.js';
import type { ControlPlaneStore } from '../store/control-plane-store.js';
import type { WorkflowRunRecord, WorkflowTaskRecord } from '../store/workflow-store.js';
import { buildTaskPrompt } from './build-task-prompt.js';
import { checkSubmittedResult } from './check-submitted-result.js';
import { deadLocalOwners, newRunnerOwner } from './runner-owner.js';
import type { OpenTaskTurn } from './sidecar-task-turns.js';

/** What the runner reports as it goes (progress lines, benches). */
export type WorkflowRunnerEvent =
  | { type: 'task-started'; runId: string; taskId: string; attempt: number }
  | { type: 'task-committed'; runId: string; taskId: string; attempt: number; resultJson: string; turnMs: number; controllerMs: number }
  | { type: 'attempt-failed'; runId: string; taskId: string; attempt: number; reason: string; taskFailed: boolean; turnMs: number }
  | { type: 'run-finished'; runId: string; state: WorkflowRunRecord['state']; error?: string };

/** Options of the WorkflowRunner. */
export interface WorkflowRunnerOptions {
  store: ControlPlaneStore;
  model: ResponsesModel;
  openTaskTurn: OpenTaskTurn;
  /** Each task turn's typed events (the web console records them). */
  onTurnEvent?: (turn: { turnId: string; agentId: string; kind: string; label: string }, event: TurnEvent) => void;
  /** This runner's lease owner id (default `host:pid:random`). */
  owner?: string;
  /** How long a lease lasts without renewal (default 30 s); renewed every third of it. */
  leaseMs?: number;
  /** Passed to each task turn's loop. */
  turnOptions?: Pick<RunTurnOptions, 'toolSearch' | 'flattenNamespaces' | 'maxModelCalls' | 'callDeadlineMs'>;
  logger?: Logger;
  onEvent?: (event: WorkflowRunnerEvent) => void;
}

type StopReason = 'cancelled' | 'failed' | 'closing' | 'lost-lease';

interface DrivenRun {
  /** Aborts the run's task turns (and their sidecar calls). */
  tasks: AbortController;
  stopReason?: StopReason;
  done: Promise<void>;
}

/**
 * Runs workflow runs from the store: each task as an isolated task turn, at most `max_parallel` at a
 * time, a task once all its dependencies are committed; each submitted value validated again
 * against the persisted schema and committed exactly once; a task that uses up its attempts fails
 * the run (pending tasks skipped, running ones aborted and marked cancelled). The runner holds a
 * lease on each run it drives and renews it; `close()` aborts running task turns, logs their
 * attempts as interrupted and gives the leases up, so the next runner resumes at once.
 */
export class WorkflowRunner implements WorkflowRunnerHook {
  readonly owner: string;
  readonly leaseMs: number;
  private readonly options: WorkflowRunnerOptions;
  private readonly logger: Logger;
  private readonly runs = new Map<string, DrivenRun>();
  private readonly schemas = new Map<string, ReturnType<typeof compileJsonSchema>>();
  private leaseTimer: NodeJS.Timeout | undefined;
  private claimTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(options: WorkflowRunnerOptions) {
    this.options = options;
    this.owner = options.owner ?? newRunnerOwner();
    this.leaseMs = options.leaseMs ?? 30_000;
    this.logger = options.logger ?? silentLogger;
  }

  /** Starts driving a run this runner already holds (created with its owner id). */
  adopt(runId: string): void {
    if (this.closed || this.runs.has(runId)) return;
    const entry: DrivenRun = { tasks: new AbortController(), done: Promise.resolve() };
    // Every task turn of the run listens on this one signal (opening, the model call, its calls):
    // a few listeners per running task, up to max_parallel tasks.
    setMaxListeners(256, entry.tasks.signal);
    this.runs.set(runId, entry);
    entry.done = this.drive(runId, entry)
      .catch((error: unknown) => {
        this.logger.error('workflow run stopped on an error; it stays running for the next runner', { runId, error: errorMessage(error) });
      })
      .finally(() => this.runs.delete(runId));
    this.leaseTimer ??= setInterval(() => void this.renewLeases(), Math.max(50, Math.floor(this.leaseMs / 3))).unref();
  }

  /**
   * Claims the running runs nobody holds (no owner, a lease that ran out, an owner process on this
   * host that is gone) and drives them. Their committed tasks are kept; tasks left running become
   * new attempts. Returns the run ids taken.
   */
  async resume(): Promise<string[]> {
    if (this.closed) return [];
    const running = await this.options.store.workflows.listRuns({ state: 'running', limit: 10_000 });
    const takeOverFrom = deadLocalOwners(running.flatMap((run) => (run.owner ? [run.owner] : [])));
    const claimed = await this.options.store.workflows.claimRuns({ owner: this.owner, leaseMs: this.leaseMs, takeOverFrom });
    for (const runId of claimed) this.adopt(runId);
    if (claimed.length > 0) this.logger.info('resumed workflow runs', { runIds: claimed });
    return claimed;
  }

  /**
   * Claims free runs every `intervalMs` (as `resume()` does) until `close()`: for a long-lived
   * controller, so runs that other processes started or left behind get driven here.
   */
  watchForFreeRuns(options: { intervalMs: number }): void {
    if (this.closed || this.claimTimer) return;
    const tick = () => {
      this.resume().catch((error: unknown) => this.logger.warn('could not claim free workflow runs', { error: errorMessage(error) }));
    };
    this.claimTimer = setInterval(tick, options.intervalMs).unref();
    tick();
  }

  /** The run was cancelled in the store: abort its running task turns now. */
  cancelled(runId: string, reason: string): void {
    const entry = this.runs.get(runId);
    if (!entry) return;
    entry.stopReason ??= 'cancelled';
    entry.tasks.abort(new ToolRuntimeError('aborted', `the workflow was cancelled: ${reason}`));
  }

  /**
   * Waits until this runner stops driving `runId` (finished, cancelled, or the runner closed) and
   * returns the stored run.
   *
   * @throws ToolRuntimeError `aborted` when `signal` aborts first.
   */
  async waitForRun(runId: string, options: { signal?: AbortSignal } = {}): Promise<WorkflowRunRecord | undefined> {
    const entry = this.runs.get(runId);
    if (entry) {
      const { signal } = options;
      if (signal?.aborted) throw new ToolRuntimeError('aborted', 'waiting for the workflow was aborted');
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(new ToolRuntimeError('aborted', 'waiting for the workflow was aborted'));
        signal?.addEventListener('abort', onAbort, { once: true });
        void entry.done.then(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        });
      });
    }
    return this.options.store.workflows.getRun(runId);
  }

  /** The ids of the runs this runner drives now. */
  activeRuns(): string[] {
    return [...this.runs.keys()];
  }

  /**
   * Stops: aborts every running task turn (attempts logged `interrupted`, not counted against
   * max_attempts), waits for them to end, and gives the leases up. Idempotent.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    if (this.claimTimer) clearInterval(this.claimTimer);
    this.leaseTimer = undefined;
    this.claimTimer = undefined;
    const entries = [...this.runs.entries()];
    for (const [, entry] of entries) {
      entry.stopReason ??= 'closing';
      entry.tasks.abort(new ToolRuntimeError('aborted', 'the workflow runner is stopping'));
    }
    await Promise.all(entries.map(([, entry]) => entry.done));
    for (const [runId] of entries) await this.options.store.workflows.releaseRun({ owner: this.owner, runId }).catch(() => {});
  }

  private async renewLeases(): Promise<void> {
    const runIds = [...this.runs.keys()];
    if (runIds.length === 0 || this.closed) return;
    try {
      const held = new Set(await this.options.store.workflows.renewLeases({ owner: this.owner, leaseMs: this.leaseMs, runIds }));
      for (const runId of runIds) {
        const entry = this.runs.get(runId);
        if (held.has(runId) || !entry) continue;
        // Ended elsewhere (cancelled through another process) or taken over: stop its task turns.
        const run = await this.options.store.workflows.getRun(runId);
        entry.stopReason ??= run?.state === 'running' ? 'lost-lease' : 'cancelled';
        entry.tasks.abort(new ToolRuntimeError('aborted', run?.state === 'running' ? 'another runner took the workflow over' : `the workflow ${run?.state ?? 'disappeared'}`));
      }
    } catch (error) {
      this.logger.warn('could not renew workflow leases', { error: errorMessage(error) });
    }
  }

  private async drive(runId: string, entry: DrivenRun): Promise<void> {
    const running = new Map<string, Promise<void>>();
    try {
      await this.driveLoop(runId, entry, running);
    } catch (error) {
      // The store failed under the run: stop its task turns and leave it for the next runner.
      entry.stopReason ??= 'closing';
      entry.tasks.abort(new ToolRuntimeError('aborted', `the workflow runner failed: ${errorMessage(error)}`));
      await Promise.allSettled(running.values());
      throw error;
    }
  }

  private async driveLoop(runId: string, entry: DrivenRun, running: Map<string, Promise<void>>): Promise<void> {
    const { store } = this.options;
    const run = await store.workflows.getRun(runId);
    if (!run || run.state !== 'running') return;
    const tasks = new Map(run.tasks.map((task) => [task.taskId, { ...task }]));
    const signal = entry.tasks.signal;
    for (;;) {
      if (signal.aborted) break;
      const all = [...tasks.values()];
      const failedTask = all.find((task) => task.state === 'failed');
      if (failedTask || all.every((task) => task.state === 'committed')) {
        const error = failedTask ? `task "${failedTask.taskId}" failed after ${failedTask.failedAttempts} attempts: ${failedTask.error ?? 'no reason'}` : undefined;
        if (failedTask) entry.stopReason ??= 'failed';
        const finished = await store.workflows.finishRun({ runId, state: failedTask ? 'failed' : 'succeeded', ...(error ? { error } : {}) });
        if (failedTask) entry.tasks.abort(new ToolRuntimeError('aborted', `the workflow failed: ${error}`));
        this.options.onEvent?.({ type: 'run-finished', runId, state: finished?.state ?? 'failed', ...(finished?.error ? { error: finished.error } : {}) });
        break;
      }
      let ended = false;
      for (const task of all) {
        if (running.size >= run.maxParallel) break;
        if (task.state !== 'pending' || running.has(task.taskId)) continue;
        if (!task.dependsOn.every((id) => tasks.get(id)?.state === 'committed')) continue;
        const attempt = await store.workflows.startAttempt({ runId, taskId: task.taskId });
        if (attempt === undefined) {
          ended = true;
          break;
        }
        task.state = 'running';
        task.attempts = attempt;
        this.options.onEvent?.({ type: 'task-started', runId, taskId: task.taskId, attempt });
        running.set(task.taskId, this.runAttempt(run, task, attempt, tasks, entry).finally(() => running.delete(task.taskId)));
      }
      if (ended || running.size === 0) {
        // Nothing to start and nothing running: the run ended elsewhere (or the store disagrees with
        // this runner's view). Stop driving; whoever resumes it reads the store afresh.
        const stored = await store.workflows.getRun(runId);
        if (stored?.state !== 'running') {
          entry.stopReason ??= 'cancelled';
          entry.tasks.abort(new ToolRuntimeError('aborted', `the workflow ${stored?.state ?? 'disappeared'}`));
          break;
        }
        if (running.size === 0) break;
      }
      await Promise.race(running.values());
    }
    await Promise.all(running.values());
    if (entry.stopReason === 'cancelled') {
      const stored = await store.workflows.getRun(runId);
      this.options.onEvent?.({ type: 'run-finished', runId, state: stored?.state ?? 'cancelled', ...(stored?.error ? { error: stored.error } : {}) });
    }
  }

  private async runAttempt(run: WorkflowRunRecord, task: WorkflowTaskRecord, attempt: number, tasks: Map<string, WorkflowTaskRecord>, entry: DrivenRun): Promise<void> {
    const { store } = this.options;
    const signal = entry.tasks.signal;
    const turnId = `${run.runId}:${task.taskId}:${attempt}`;
    const started = performance.now();
    let outcome: TaskTurnOutcome;
    try {
      const session = await this.options.openTaskTurn({ agentId: run.agentId, turnId, resultSchemaJson: task.resultSchemaJson, signal });
      try {
        outcome = await runTaskTurn({ model: this.options.model, turn: session, prompt: buildTaskPrompt(task, tasks), signal, turnId, ...this.options.turnOptions, ...(this.options.onTurnEvent ? { onEvent: (event: TurnEvent) => this.options.onTurnEvent?.({ turnId, agentId: run.agentId, kind: 'workflow-task', label: `${run.name} · ${task.taskId} #${attempt}` }, event) } : {}) });
      } finally {
        if (signal.aborted) session.abort();
        else await session.close({ timeoutMs: 5_000 }).catch(() => session.abort());
      }
    } catch (error) {
      outcome = { status: 'failed', turnStatus: signal.aborted ? 'aborted' : 'sidecar_unavailable', reason: errorMessage(error), modelCalls: 0, repaired: false, rejectedSubmissions: 0 };
    }
    const turnMs = performance.now() - started;
    if (signal.aborted) {
      // A cancelled or failed run already closed the attempt in the store; a stopping runner or one
      // that lost its lease leaves it for the next runner, uncounted.
      if (entry.stopReason === 'closing' || entry.stopReason === 'lost-lease') {
        await store.workflows.endAttempt({ runId: run.runId, taskId: task.taskId, attempt, outcome: 'interrupted', error: 'the workflow runner stopped' }).catch(() => {});
      }
      return;
    }
    const afterTurn = performance.now();
    let reason: string;
    if (outcome.status === 'submitted') {
      const check = checkSubmittedResult(task.resultSchemaJson, outcome.result, { cache: this.schemas });
      if (check.ok) {
        const commit = await store.workflows.commitResult({ runId: run.runId, taskId: task.taskId, attempt, resultJson: check.resultJson });
        if (commit.committed || commit.reason === 'already_committed') {
          const stored = commit.committed ? undefined : (await store.workflows.getRun(run.runId))?.tasks.find((t) => t.taskId === task.taskId);
          task.state = 'committed';
          task.resultJson = stored?.resultJson ?? check.resultJson;
          const controllerMs = performance.now() - afterTurn;
          this.options.onEvent?.({ type: 'task-committed', runId: run.runId, taskId: task.taskId, attempt, resultJson: task.resultJson, turnMs, controllerMs });
        }
        return;
      }
      reason = `the submitted value does not match the result schema persisted at workflow start, so it was not committed: ${check.reasons}`;
    } else {
      reason = outcome.reason;
    }
    const state = await store.workflows.endAttempt({ runId: run.runId, taskId: task.taskId, attempt, outcome: 'failed', error: reason });
    task.state = state ?? 'failed';
    task.error = reason;
    task.failedAttempts++;
    this.logger.warn('workflow task attempt failed', { runId: run.runId, taskId: task.taskId, attempt, reason, taskFailed: task.state === 'failed' });
    this.options.onEvent?.({ type: 'attempt-failed', runId: run.runId, taskId: task.taskId, attempt, reason, taskFailed: task.state === 'failed', turnMs });
  }
}
