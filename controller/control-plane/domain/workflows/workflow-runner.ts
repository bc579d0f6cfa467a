import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { errorMessage, silentLogger, ToolRuntimeError, type Logger } from '../../../../src/index.js';
import { compileJsonSchema } from '../../../../src/arguments/json-schema-validator.js';
import { runTaskTurn, type TaskTurnOutcome } from '../../../loop/run-task-turn.js';
import type { RunTurnOptions } from '../../../loop/run-turn.js';
import type { TurnEvent } from '../../../loop/turn-events.js';
import type { ResponsesModel } from '../../../model/responses-model.js';
import type { ControlPlaneStore } from '../control-plane-store.js';
import type { TaskClaim, TaskClaimScope, WorkflowRunRecord, WorkflowStore, WorkflowTaskRecord } from './workflow-store.js';
import { buildTaskPrompt } from './build-task-prompt.js';
import { checkSubmittedResult } from './check-submitted-result.js';
import { deadLocalOwners, newRunnerOwner } from './runner-owner.js';
import type { OpenTaskTurn } from './sidecar-task-turns.js';
import { openTaskJournal } from '../turns/task-journal.js';

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
  /** This runner's claim owner id (default `host:pid:random`). */
  owner?: string;
  /** How long a claim lasts without renewal where the store leases claims (SQLite; default 30 s). */
  leaseMs?: number;
  /** How often the runner looks for claimable tasks, renews its claims and checks its runs (default 1 s, at most a third of `leaseMs`). */
  pollMs?: number;
  /** Task turns this runner runs at once, over all runs (default 16); each run's max_parallel holds as well. */
  maxRunningTasks?: number;
  /** A task turn running longer is aborted and its attempt fails (default 30 min; shorter where the store's claims expire sooner: `claimLifetimeMs`). */
  attemptTimeoutMs?: number;
  /** Passed to each task turn's loop. */
  turnOptions?: Pick<RunTurnOptions, 'toolSearch' | 'flattenNamespaces' | 'maxModelCalls' | 'callDeadlineMs' | 'idempotentTools' | 'stopAt'>;
  logger?: Logger;
  onEvent?: (event: WorkflowRunnerEvent) => void;
}

/** Why a running attempt was stopped. */
type StopReason = 'cancelled' | 'run-ended' | 'closing' | 'lost-claim' | 'timeout';

interface RunningAttempt {
  claim: TaskClaim;
  abort: AbortController;
  stopReason?: StopReason;
  done: Promise<void>;
  /** Until when the claim holds for sure (the start of the claim or of its last renewal + the lease). */
  heldUntil: number;
  /** Stops the turn before `heldUntil` unless a renewal moves it. */
  guard?: NodeJS.Timeout;
}

/** Tries of one commit of a finished turn's result (250 ms, 0.5, 1, 2, 4, 4 s between them: about 12 s). */
const COMMIT_TRIES = 7;

/** The workflow runner of this process, as the control handlers (grpc/control-handler.ts) reach it: what `WorkflowRunner` does for them. */
export interface WorkflowRunnerHook {
  /** A run was just created here: start claiming its tasks. */
  adopt(runId: string): void;
  /** A run was cancelled in the store: abort its running task turns now. */
  cancelled(runId: string, reason: string): void;
}

const claimKey = (claim: TaskClaim) => `${claim.runId}\u0000${claim.taskId}\u0000${claim.attempt}`;

/**
 * Runs workflow task attempts claimed from the store. Work is claimed, not assigned: any runner
 * whose scope covers a run may claim its ready tasks (a lease on the task's row, which the runner
 * renews), so several controllers share one run and a runner that dies loses only the attempts it
 * held. Each attempt is an isolated task turn; a submitted value is validated again against the
 * persisted schema and committed exactly once by the store, which also ends the run (its last
 * commit, or a task that used up its attempts). `close()` aborts running task turns and hands their
 * attempts back uncounted, so another runner takes them at once.
 */
export class WorkflowRunner implements WorkflowRunnerHook {
  readonly owner: string;
  readonly leaseMs: number;
  private readonly options: WorkflowRunnerOptions;
  private readonly logger: Logger;
  private readonly pollMs: number;
  private readonly maxRunningTasks: number;
  private readonly attemptTimeoutMs: number;
  private readonly attempts = new Map<string, RunningAttempt>();
  private readonly schemas = new Map<string, ReturnType<typeof compileJsonSchema>>();
  /**
   * The runs whose tasks run here, as last read: prompts, schemas and committed results never
   * change, so a run is read again only when a task's dependency has no result in it yet. A few
   * dozen runs at most (least recently used dropped), and a run's entry goes when it ends.
   */
  private readonly runs = new Map<string, { run: WorkflowRunRecord; tasks: Map<string, WorkflowTaskRecord> }>();
  /** Runs adopted by id (the CLI's); `agents` widens the scope to every run of those agents (serve), `all` to every run. */
  private readonly runIds = new Set<string>();
  private agents: Set<string> | 'all' | undefined;
  /** Runs this runner worked on or was asked about and whose end it has not reported yet (reported once, then forgotten). */
  private readonly known = new Set<string>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private gone: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;
  private ticking = false;
  /** No more claims (closing, or draining within a grace). */
  private closed = false;
  /** Closed and every task turn ended: no more renewals. */
  private stopped = false;

  constructor(options: WorkflowRunnerOptions) {
    this.options = options;
    this.owner = options.owner ?? newRunnerOwner();
    this.leaseMs = options.leaseMs ?? 30_000;
    this.pollMs = Math.max(20, Math.min(options.pollMs ?? 1_000, Math.floor(this.leaseMs / 3)));
    this.maxRunningTasks = options.maxRunningTasks ?? 16;
    // Where the store's claims cannot be renewed (PostgreSQL), a task turn ends 2 s before its claim
    // expires, so a live runner never has its task taken over; every caller of the runner gets this.
    const lifetimeMs = options.store.workflows.claimLifetimeMs;
    this.attemptTimeoutMs = Math.min(options.attemptTimeoutMs ?? 1_800_000, lifetimeMs !== undefined ? Math.max(1_000, lifetimeMs - 2_000) : Number.POSITIVE_INFINITY);
    this.logger = options.logger ?? silentLogger;
  }

  /** Runs the tasks of `runId` (a run just created here, or one to resume): claims its ready tasks from now on. */
  adopt(runId: string): void {
    if (this.closed) return;
    this.runIds.add(runId);
    this.known.add(runId);
    this.start();
  }

  /**
   * Runs the tasks of every run of `agentIds` (a `serve` controller's agents), including runs other
   * processes started and attempts of runners that are gone.
   */
  serveAgents(agentIds: Iterable<string>): void {
    if (this.closed) return;
    this.agents = new Set(agentIds);
    this.start();
  }

  /** Runs the tasks of every run in the store, whichever agent's. */
  serveAll(): void {
    if (this.closed) return;
    this.agents = 'all';
    this.start();
  }

  /** The run was cancelled in the store: abort its running task turns here now. */
  cancelled(runId: string, reason: string): void {
    this.stopRun(runId, 'cancelled', `the workflow was cancelled: ${reason}`);
    void this.reportIfEnded(runId);
  }

  /**
   * Waits until `runId` is no longer running in the store (whichever runner ended it) and none of
   * its task turns runs here any more, or this runner closes, and returns the stored run.
   *
   * @throws ToolRuntimeError `aborted` when `signal` aborts first.
   */
  async waitForRun(runId: string, options: { signal?: AbortSignal } = {}): Promise<WorkflowRunRecord | undefined> {
    const { signal } = options;
    for (;;) {
      if (signal?.aborted) throw new ToolRuntimeError('aborted', 'waiting for the workflow was aborted');
      const run = await this.options.store.workflows.getRun(runId);
      // An ended run is returned once its task turns here have ended too (an aborted turn takes a moment to wind down).
      if (!run || this.stopped || (run.state !== 'running' && !this.activeRuns().includes(runId))) return run;
      if (run.state === 'running') this.known.add(runId);
      await new Promise<void>((resolve, reject) => {
        const waiting = this.waiters.get(runId) ?? new Set();
        this.waiters.set(runId, waiting);
        const done = () => {
          clearTimeout(timer);
          waiting.delete(done);
          if (waiting.size === 0 && this.waiters.get(runId) === waiting) this.waiters.delete(runId);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          done();
          reject(new ToolRuntimeError('aborted', 'waiting for the workflow was aborted'));
        };
        // Woken when this runner sees the run change; the poll covers runners elsewhere.
        const timer = setTimeout(done, this.pollMs);
        waiting.add(done);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
  }

  /** The ids of the runs this runner has task turns running for now. */
  activeRuns(): string[] {
    return [...new Set([...this.attempts.values()].map((attempt) => attempt.claim.runId))];
  }

  /**
   * Stops claiming; lets running task turns finish for `graceMs` (default 0; their claims are still
   * renewed meanwhile), then aborts the rest (each attempt is handed back `interrupted`, not counted
   * against max_attempts, and claimable by another runner at once) and waits for them to end.
   * Idempotent.
   */
  async close(options: { graceMs?: number } = {}): Promise<void> {
    this.closed = true;
    await this.pumping?.catch(() => undefined);
    const graceMs = options.graceMs ?? 0;
    if (graceMs > 0 && this.attempts.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([...this.attempts.values()].map((attempt) => attempt.done)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
    }
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const running = [...this.attempts.values()];
    for (const attempt of running) this.stop(attempt, 'closing', 'the workflow runner is stopping');
    await Promise.all(running.map((attempt) => attempt.done));
    for (const waiting of this.waiters.values()) for (const wake of [...waiting]) wake();
  }

  private start(): void {
    if (this.timer) {
      this.pump();
      return;
    }
    this.timer = setInterval(() => void this.tick(), this.pollMs).unref();
    // The first tick learns which claim owners are gone before it claims, so their tasks run here at once.
    void this.tick();
  }

  private scope(): TaskClaimScope | undefined {
    if (this.agents === 'all') return {};
    if (this.agents) return { agentIds: [...this.agents] };
    return this.runIds.size > 0 ? { runIds: [...this.runIds] } : undefined;
  }

  /** Claims and starts attempts while there is room; one pump at a time, re-run when asked meanwhile. */
  private pump(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = (async () => {
      do {
        this.pumpAgain = false;
        const scope = this.scope();
        while (scope && !this.closed && this.attempts.size < this.maxRunningTasks) {
          const asked = Date.now();
          const claim = await this.options.store.workflows.claimTask({ ...scope, owner: this.owner, leaseMs: this.leaseMs, takeOverFrom: this.gone });
          if (!claim) break;
          if (this.closed) {
            await this.options.store.workflows.endAttempt({ ...claim, outcome: 'interrupted', error: 'the workflow runner is stopping' });
            break;
          }
          this.run(claim, asked + this.leaseMs);
        }
      } while (this.pumpAgain && !this.closed);
    })()
      .catch((error: unknown) => this.logger.warn('could not claim workflow tasks', { error: errorMessage(error) }))
      .finally(() => {
        this.pumping = undefined;
      });
  }

  /** Every poll: notice owners that are gone, renew claims (aborting lost ones), wake waiters, claim more. */
  private async tick(): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      const { workflows } = this.options.store;
      this.gone = deadLocalOwners(await workflows.claimOwners());
      const mine = [...this.attempts.values()];
      if (mine.length > 0) {
        const renewedAt = Date.now();
        const held = new Set((await workflows.renewClaims({ owner: this.owner, leaseMs: this.leaseMs, claims: mine.map((attempt) => attempt.claim) })).map(claimKey));
        for (const attempt of mine) {
          if (held.has(claimKey(attempt.claim))) {
            attempt.heldUntil = renewedAt + this.leaseMs;
            this.guard(attempt);
          }
          if (held.has(claimKey(attempt.claim)) || attempt.stopReason) continue;
          // Taken over (its claim lapsed) or its run ended elsewhere: stop the task turn, write nothing.
          this.stop(attempt, 'lost-claim', 'the task attempt is no longer this runner\'s (its run ended, or another runner took it over)');
          void this.reportIfEnded(attempt.claim.runId);
        }
      }
      for (const runId of this.waiters.keys()) this.wake(runId);
      this.pump();
    } catch (error) {
      this.logger.warn('could not check workflow claims', { error: errorMessage(error) });
    } finally {
      this.ticking = false;
    }
  }

  /**
   * Stops the attempt's turn a margin before its claim would run out unrenewed (a fifth of the
   * lease, at most 2 s): past that another runner may take the task over, and two turns of one task
   * would run at once. It records nothing: the claim is handed on, not failed.
   */
  private guard(attempt: RunningAttempt): void {
    clearTimeout(attempt.guard);
    const margin = Math.min(2_000, Math.floor(this.leaseMs / 5));
    attempt.guard = setTimeout(
      () => this.stop(attempt, 'lost-claim', `the task attempt's claim could not be renewed within its ${this.leaseMs} ms lease; stopped so that no other runner runs it at the same time`),
      Math.max(0, attempt.heldUntil - margin - Date.now()),
    );
    attempt.guard.unref?.();
  }

  private run(claim: TaskClaim, heldUntil: number): void {
    const abort = new AbortController();
    // The task turn listens on this signal (opening, the model call, its calls).
    setMaxListeners(64, abort.signal);
    const attempt: RunningAttempt = { claim, abort, done: Promise.resolve(), heldUntil };
    this.guard(attempt);
    this.attempts.set(claimKey(claim), attempt);
    this.known.add(claim.runId);
    this.emit({ type: 'task-started', runId: claim.runId, taskId: claim.taskId, attempt: claim.attempt });
    const timeout = setTimeout(() => this.stop(attempt, 'timeout', `the task turn ran longer than ${this.attemptTimeoutMs} ms`), this.attemptTimeoutMs);
    attempt.done = this.runAttempt(attempt)
      .catch((error: unknown) => this.logger.error('a workflow task attempt stopped on an error; its claim lapses for another runner', { ...claim, error: errorMessage(error) }))
      .finally(() => {
        clearTimeout(timeout);
        clearTimeout(attempt.guard);
        this.attempts.delete(claimKey(claim));
        this.wake(claim.runId);
        this.pump();
      });
  }

  /**
   * Tells the observer; an observer that throws is logged, never allowed to break the runner (a
   * throw on `task-started` used to leave an attempt that was never run, its claim renewed forever).
   */
  private emit(event: WorkflowRunnerEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch (error) {
      this.logger.error('a workflow event observer threw; the runner goes on', { event: event.type, runId: event.runId, error: errorMessage(error) });
    }
  }

  /**
   * Commits a finished turn's accepted result, retrying a store error (a database restarting, a
   * lost connection) with backoff, at most COMMIT_TRIES times over about 12 s: the turn and its
   * model cost are spent, and a lost commit would run the task again. The claim is still held
   * meanwhile; if it lapses, the store answers that the task was committed elsewhere or the run ended.
   *
   * @throws the store's last error when every try failed.
   */
  private async commitWithRetry(input: Parameters<WorkflowStore['commitResult']>[0], turnMs: number): ReturnType<WorkflowStore['commitResult']> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.options.store.workflows.commitResult(input);
      } catch (error) {
        if (attempt >= COMMIT_TRIES) throw error;
        const delayMs = Math.min(4_000, 250 * 2 ** (attempt - 1));
        this.logger.warn('could not commit a finished task turn; trying again', { runId: input.runId, taskId: input.taskId, attempt: input.attempt, try: attempt, delayMs, turnMs: Math.round(turnMs), error: errorMessage(error) });
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  private stop(attempt: RunningAttempt, reason: StopReason, message: string): void {
    if (attempt.stopReason) return;
    attempt.stopReason = reason;
    attempt.abort.abort(new ToolRuntimeError('aborted', message));
  }

  private stopRun(runId: string, reason: StopReason, message: string): void {
    for (const attempt of this.attempts.values()) if (attempt.claim.runId === runId) this.stop(attempt, reason, message);
  }

  private wake(runId: string): void {
    for (const wake of [...(this.waiters.get(runId) ?? [])]) wake();
  }

  /** Reports a run's end once, when the store says it ended. */
  private async reportIfEnded(runId: string, known?: { state: WorkflowRunRecord['state']; error?: string }): Promise<void> {
    const run = known ?? (await this.options.store.workflows.getRun(runId).catch(() => undefined));
    if (!run || run.state === 'running') return;
    this.wake(runId);
    this.runIds.delete(runId);
    this.runs.delete(runId);
    if (!this.known.delete(runId)) return;
    this.emit({ type: 'run-finished', runId, state: run.state, ...(run.error ? { error: run.error } : {}) });
  }

  /** The claimed task's run, from the cache when it holds every result the task's prompt needs. */
  private async readRun(claim: TaskClaim): Promise<{ run: WorkflowRunRecord; tasks: Map<string, WorkflowTaskRecord>; task: WorkflowTaskRecord } | undefined> {
    let cached = this.runs.get(claim.runId);
    const fresh = (entry: typeof cached) => {
      const task = entry?.tasks.get(claim.taskId);
      return task && task.dependsOn.every((id) => entry!.tasks.get(id)?.resultJson !== undefined) ? task : undefined;
    };
    if (!fresh(cached)) {
      const run = await this.options.store.workflows.getRun(claim.runId);
      if (!run) return undefined;
      cached = { run, tasks: new Map(run.tasks.map((task) => [task.taskId, task])) };
    }
    this.runs.delete(claim.runId);
    this.runs.set(claim.runId, cached!);
    if (this.runs.size > 64) this.runs.delete(this.runs.keys().next().value!);
    const task = fresh(cached);
    return task ? { ...cached!, task } : undefined;
  }

  private async runAttempt(attempt: RunningAttempt): Promise<void> {
    const { store } = this.options;
    const { claim, abort } = attempt;
    const signal = abort.signal;
    const turnId = `${claim.runId}:${claim.taskId}:${claim.attempt}`;
    const started = performance.now();
    let outcome: TaskTurnOutcome;
    const read = await this.readRun(claim);
    if (!read) return;
    const { run, tasks, task } = read;
    try {
      const journal = await openTaskJournal(store, claim, run.agentId);
      const session = await this.options.openTaskTurn({ agentId: run.agentId, turnId, resultSchemaJson: task.resultSchemaJson, signal });
      try {
        const onEvent = this.options.onTurnEvent;
        outcome = await runTaskTurn({
          model: this.options.model,
          turn: session,
          prompt: buildTaskPrompt(task, tasks),
          signal,
          turnId,
          journal,
          ...this.options.turnOptions,
          ...(onEvent ? { onEvent: (event: TurnEvent) => onEvent({ turnId, agentId: run.agentId, kind: 'workflow-task', label: `${run.name} · ${task.taskId} #${claim.attempt}` }, event) } : {}),
        });
      } finally {
        if (signal.aborted) session.abort();
        else await session.close({ timeoutMs: 5_000 }).catch(() => session.abort());
      }
    } catch (error) {
      outcome = { status: 'failed', turnStatus: signal.aborted ? 'aborted' : 'sidecar_unavailable', reason: errorMessage(error), modelCalls: 0, repaired: false, rejectedSubmissions: 0 };
    }
    const turnMs = performance.now() - started;
    const base = { runId: claim.runId, taskId: claim.taskId, attempt: claim.attempt };
    if (signal.aborted && attempt.stopReason !== 'timeout') {
      // A cancelled or ended run already closed the attempt in the store, and a lost claim is
      // someone else's now; a stopping runner hands its attempt back, uncounted.
      if (attempt.stopReason === 'closing') await store.workflows.endAttempt({ ...base, outcome: 'interrupted', error: 'the workflow runner stopped' });
      return;
    }
    const afterTurn = performance.now();
    let reason: string;
    if (outcome.status === 'submitted' && !signal.aborted) {
      const check = checkSubmittedResult(task.resultSchemaJson, outcome.result, { cache: this.schemas });
      if (check.ok) {
        const commit = await this.commitWithRetry({ ...base, resultJson: check.resultJson }, turnMs);
        if (commit.committed || commit.reason === 'already_committed') {
          const resultJson = commit.committed ? check.resultJson : ((await store.workflows.getRun(claim.runId))?.tasks.find((t) => t.taskId === claim.taskId)?.resultJson ?? check.resultJson);
          this.emit({ type: 'task-committed', ...base, resultJson, turnMs, controllerMs: performance.now() - afterTurn });
        }
        if (commit.runState !== 'running' && commit.runState !== undefined) await this.reportIfEnded(claim.runId, { state: commit.runState, ...(commit.runError ? { error: commit.runError } : {}) });
        return;
      }
      reason = `the submitted value does not match the result schema persisted at workflow start, so it was not committed: ${check.reasons}`;
    } else {
      reason = attempt.stopReason === 'timeout' ? `the task turn ran longer than ${this.attemptTimeoutMs} ms` : outcome.status === 'submitted' ? 'the task turn was stopped' : outcome.reason;
    }
    const ended = await store.workflows.endAttempt({ ...base, outcome: 'failed', error: reason });
    const taskFailed = ended.taskState === 'failed';
    this.logger.warn('workflow task attempt failed', { ...base, reason, taskFailed });
    this.emit({ type: 'attempt-failed', ...base, reason, taskFailed, turnMs });
    if (ended.runState !== undefined && ended.runState !== 'running') {
      // This failure ended the run: stop its other task turns here (runners elsewhere see it at their next renewal).
      this.stopRun(claim.runId, 'run-ended', `the workflow ${ended.runState}: ${ended.runError ?? reason}`);
      await this.reportIfEnded(claim.runId, { state: ended.runState, ...(ended.runError ? { error: ended.runError } : {}) });
    }
  }
}
