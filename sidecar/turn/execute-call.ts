import {
  errorMessage,
  isToolRuntimeError,
  type AgentToolResult,
  type Logger,
  type PresentationEvent,
  type ToolExecutionContext,
  type WorkerAgentTool,
} from '../../src/index.js';
import type { SidecarLimits } from '../sidecar-limits.js';
import { deniedMessage, errorResult, successResult } from './build-result.js';
import { CallContext } from './call-context.js';
import type { CallTicket } from './call-scheduler.js';
import type { DeadlineTimer } from './deadline-timer.js';
import type { CallErrorCode, CallResult, TurnEvent } from './turn-event.js';

/** A call that has been scheduled: it can be aborted until its result is sent. */
export interface RunningCall {
  /** Aborts the call with `code` as the reason its result will carry (the first abort wins). */
  abort(code: AbortCode, message: string): void;
  /** The writer sent one of this call's presentation events (keeps the unsent count). */
  presentationSent(): void;
}

/** The codes an abort gives the call's result. */
export type AbortCode = 'aborted' | 'timeout' | 'tool_failed';

/** Where a call's events go: the turn's outgoing queue. */
export interface CallOutput {
  push(event: TurnEvent): void;
  /** True while the queue is below its high-water mark. */
  readonly hasRoom: boolean;
  /** Resolves when the queue has room again, or when `signal` aborts; never rejects. */
  room(signal: AbortSignal): Promise<void>;
}

/** Why a call's signal fired. */
class CallAbort extends Error {
  override readonly name = 'AbortError';
  constructor(
    readonly code: AbortCode,
    message: string,
  ) {
    super(message);
  }
}

// Aborting a finished call's controller (so its children exit) is the common path: share one
// reason rather than capture a stack trace per call.
const callEnded = new CallAbort('aborted', 'the call ended');
const resolved = Promise.resolve();

const resultCodes = new Set<CallErrorCode>([
  'invalid_arguments',
  'tool_failed',
  'timeout',
  'aborted',
  'internal',
  'sandbox_unavailable',
  'sandbox_denied',
  // Command sessions' own answers (sidecar/categories/computer/sessions/).
  'session_not_found',
  'session_ended',
  'session_limit_reached',
  'input_too_large',
]);

/**
 * Runs one validated call through the scheduler: waits for its ticket, sends `activity-started`,
 * runs `execute` with the call's signal and `emit`, and pushes exactly one `result`, whatever
 * happens. When the call is aborted and the tool does not settle within `limits.abortGraceMs`, the
 * result is sent anyway (code `aborted`, `timeout` when the deadline fired), the lock released,
 * and a warning logged. A call whose unsent presentation events exceed `limits.maxQueuedEvents`
 * is aborted with `tool_failed`. The call's controller is aborted when the call ends, however it
 * ends.
 *
 * Hot path: when the ticket is granted at once and no approval is asked, `activity-started` is
 * pushed synchronously, `execute` starts in the same tick and its settling pushes the result (never
 * before `executeCall` has returned); the AbortController is only created when someone reads the
 * signal (the tool, or a wait), and the deadline lives in the turn's one `DeadlineTimer`.
 */
export function executeCall(options: ExecuteCallOptions): RunningCall {
  return new CallRun(options);
}

/** What `executeCall` needs. */
export interface ExecuteCallOptions {
  callId: string;
  tool: WorkerAgentTool;
  params: unknown;
  repairs: string[];
  deadlineMs: number;
  ticket: CallTicket;
  limits: SidecarLimits;
  logger: Logger;
  now: () => number;
  output: CallOutput;
  deadlines: DeadlineTimer;
  /**
   * Asks the client's approval once the call may run, before `activity-started` and `execute`;
   * absent when the turn's policy does not ask for this tool. The wait is not counted in
   * `durationMs`. Rejects when the call's signal aborts.
   */
  approve?: (label: string, signal: AbortSignal) => Promise<{ approved: boolean; reason: string }>;
  /** Called with the call id once its result was pushed. */
  onSettled: (callId: string) => void;
}

// A class rather than closures: one object per call, its methods shared (the hot path allocates
// little, and tsx's keepNames does not rename a dozen closures per call). A call whose ticket is
// granted at once and that needs no approval runs without an async function or a promise of its
// own: `execute`'s promise is the only one, and its settling pushes the result directly.
/**
 * Where a call is: `waiting` for its ticket or approval, `running` its `execute` (its outcome
 * awaited: an abort then starts the grace), `settling` (the outcome came, the result is being
 * built), `done` (the result was pushed). One value, so that no step can see a half-updated mix.
 */
type CallPhase = 'waiting' | 'running' | 'settling' | 'done';

class CallRun implements RunningCall {
  private controller: AbortController | undefined;
  private reason: CallAbort | undefined;
  private phase: CallPhase = 'waiting';
  // Events after the result is decided (a tool that kept going after its abort) are dropped.
  private emitting = true;
  private unsent = 0;
  private grace: NodeJS.Timeout | undefined;
  private label: string;
  private started = 0;
  private readonly cancelDeadline: () => void;
  private readonly context: ToolExecutionContext;

  /** When the deadline passes, on the `now` clock. */
  readonly deadlineAt: number;

  constructor(readonly options: ExecuteCallOptions) {
    this.label = options.tool.name;
    // One clock reading serves the deadline and, on the hot path, the start of `execute`.
    const at = options.now();
    this.deadlineAt = at + options.deadlineMs;
    this.cancelDeadline = options.deadlines.add(
      options.deadlineMs,
      () => this.abort('timeout', `the call ran past its deadline of ${options.deadlineMs} ms`),
      at,
    );
    this.context = new CallContext(this);
    if (!options.ticket.granted || options.approve) {
      this.prepare().catch((error: unknown) => this.failInternally(error));
      return;
    }
    try {
      this.launch(this.describe(), at);
    } catch (error) {
      // As on the slow path: an `internal` result, in a later microtask, never a throw from `call`.
      void resolved.then(() => this.failInternally(error));
    }
  }

  abort(code: AbortCode, message: string): void {
    if (this.reason || this.phase === 'done') return;
    this.reason = new CallAbort(code, message);
    this.controller?.abort(this.reason);
    if (this.phase === 'running') this.startGrace();
  }

  presentationSent(): void {
    if (this.unsent > 0) this.unsent--;
  }

  /** The call's signal, created on first use (most tools that return at once never read it). */
  signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  private pushPresentation(event: PresentationEvent): void {
    this.unsent++;
    this.options.output.push({ type: 'presentation', callId: this.options.callId, event });
  }

  emit(event: PresentationEvent): Promise<void> {
    if (!this.emitting) return resolved;
    const { limits, output, tool } = this.options;
    this.pushPresentation({ kind: String(event.kind), payload: event.payload });
    if (this.unsent > limits.maxQueuedEvents) {
      // Stop taking events at once: the backlog is what must stay bounded.
      this.emitting = false;
      this.abort(
        'tool_failed',
        `${tool.name} emitted presentation events faster than the client reads them (more than ${limits.maxQueuedEvents} waiting to be sent); the call was stopped`,
      );
      return resolved;
    }
    return output.hasRoom || this.reason ? resolved : output.room(this.signal());
  }

  /** The slow path: waits for the ticket and asks the approval, then launches (or finishes) the call. */
  private async prepare(): Promise<void> {
    const { tool, repairs, ticket, approve } = this.options;
    if (!ticket.granted) {
      try {
        await ticket.ready(this.signal());
      } catch {
        this.finish(abortedResult(this.reason, this.label, repairs, 0));
        return;
      }
    }
    const label = this.describe();
    // Aborted while it waited (see `launch`): no approval is asked for a call that will not run.
    if (this.reason) return this.finish(abortedResult(this.reason, label, repairs, 0));
    if (approve) {
      let decision: { approved: boolean; reason: string };
      try {
        decision = await approve(label, this.signal());
      } catch (error) {
        if (this.reason) this.finish(abortedResult(this.reason, label, repairs, 0));
        else this.finish(errorResult({ code: 'denied', message: deniedMessage(tool.name, label, `the approval could not be asked: ${errorMessage(error)}`), label, repairs }));
        return;
      }
      if (this.reason) return this.finish(abortedResult(this.reason, label, repairs, 0));
      if (!decision.approved) return this.finish(errorResult({ code: 'denied', message: deniedMessage(tool.name, label, decision.reason), label, repairs }));
    }
    this.launch(label);
  }

  /** The activity label, the tool's name when `describeActivity` throws. */
  private describe(): string {
    const { callId, tool, params, logger } = this.options;
    try {
      return tool.describeActivity(params);
    } catch (error) {
      logger.warn('describeActivity threw', { callId, tool: tool.name, error: errorMessage(error) });
      return tool.name;
    }
  }

  /**
   * Sends `activity-started` and starts `execute`; its outcome (or the abort grace) finishes the
   * call. A call aborted while it waited never starts: releasing the sequential call ahead of it
   * grants its ticket in the same abort, before its own abort reached it.
   */
  private launch(label: string, startedAt = this.options.now()): void {
    const { callId, tool, params, output, repairs } = this.options;
    this.label = label;
    if (this.reason) return this.finish(abortedResult(this.reason, label, repairs, 0));
    output.push({ type: 'activity-started', callId, label });
    this.started = startedAt;
    this.phase = 'running';
    let running: Promise<AgentToolResult>;
    try {
      running = Promise.resolve(tool.execute(params, this.context));
    } catch (error) {
      // Never settle inside the session's `call`: the result follows in a microtask, as for a rejection.
      running = Promise.reject(error);
    }
    running.then(
      (result) => this.returned(result),
      (error: unknown) => this.threw(error),
    );
  }

  private startGrace(): void {
    this.grace ??= setTimeout(() => this.abandoned(), this.options.limits.abortGraceMs);
  }

  /** Ends the wait for the tool's outcome; false when it already ended (first outcome wins). */
  private endExecution(): boolean {
    if (this.phase !== 'running') return false;
    this.phase = 'settling';
    if (this.grace) clearTimeout(this.grace);
    return true;
  }

  private durationMs(): number {
    return Math.max(0, Math.round(this.options.now() - this.started));
  }

  private abandoned(): void {
    if (!this.endExecution()) return;
    const { callId, tool, limits, logger, repairs } = this.options;
    logger.warn('a tool ignored its abort signal; its result was sent without it', { callId, tool: tool.name, abortGraceMs: limits.abortGraceMs });
    this.finish(abortedResult(this.reason, this.label, repairs, this.durationMs()));
  }

  private threw(error: unknown): void {
    if (!this.endExecution()) return;
    const { tool, repairs } = this.options;
    const { label } = this;
    const durationMs = this.durationMs();
    if (this.reason) return this.finish(abortedResult(this.reason, label, repairs, durationMs));
    try {
      const code = isToolRuntimeError(error) && resultCodes.has(error.code as CallErrorCode) ? (error.code as CallErrorCode) : 'tool_failed';
      this.finish(errorResult({ code, message: `${tool.name} failed: ${errorMessage(error)}`, label, repairs, durationMs }));
    } catch (failure) {
      this.failInternally(failure);
    }
  }

  private returned(result: AgentToolResult): void {
    if (!this.endExecution()) return;
    const { callId, tool, params, repairs, limits, logger } = this.options;
    const { label } = this;
    const durationMs = this.durationMs();
    if (this.reason) return this.finish(abortedResult(this.reason, label, repairs, durationMs));
    try {
      let completedLabel = label;
      try {
        completedLabel = tool.describeCompletedActivity?.(params, result) ?? label;
      } catch (error) {
        logger.warn('describeCompletedActivity threw', { callId, tool: tool.name, error: errorMessage(error) });
      }
      for (const event of result.presentation ?? []) this.pushPresentation(event);
      this.finish(successResult({ result, completedLabel, maxTextChars: limits.maxResultTextChars, repairs, durationMs }));
    } catch (error) {
      this.failInternally(error);
    }
  }

  /** The sidecar itself failed running the call (a result it could not build): `internal`. */
  private failInternally(error: unknown): void {
    this.finish(errorResult({ code: 'internal', message: `the sidecar failed running the call: ${errorMessage(error)}`, repairs: this.options.repairs }));
  }

  /** Pushes the call's one result and releases what it holds; later calls are ignored. */
  private finish(result: CallResult): void {
    if (this.phase === 'done') return;
    this.emitting = false;
    this.phase = 'done';
    if (this.grace) clearTimeout(this.grace);
    this.cancelDeadline();
    this.options.ticket.release();
    if (this.controller && !this.controller.signal.aborted) this.controller.abort(callEnded);
    this.options.output.push({ type: 'result', callId: this.options.callId, result });
    this.options.onSettled(this.options.callId);
  }
}

function abortedResult(reason: CallAbort | undefined, label: string, repairs: string[], durationMs: number): CallResult {
  return errorResult({ code: reason?.code ?? 'aborted', message: reason?.message ?? 'the call was aborted', label, repairs, durationMs });
}
