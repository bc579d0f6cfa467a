import {
  errorMessage,
  isToolRuntimeError,
  type AgentToolResult,
  type Logger,
  type PresentationEvent,
  type ToolExecutionContext,
  type WorkerAgentTool,
} from '../../src/index.js';
import type { SidecarLimits } from '../config.js';
import { errorResult, successResult } from './build-result.js';
import type { CallTicket } from './call-scheduler.js';
import type { DeadlineTimer } from './deadline-timer.js';
import type { CallErrorCode, CallResult, TurnEvent } from './turn-event.js';

/** A call that has been scheduled: it can be aborted until its result is sent. */
export interface RunningCall {
  /** Aborts the call with `code` as the reason its result will carry (the first abort wins). */
  abort(code: AbortCode, message: string): void;
  /** The writer sent one of this call's presentation events (keeps the unsent count). */
  presentationSent(): void;
  /** Settles once the call's result has been pushed. */
  readonly done: Promise<void>;
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

type Outcome = { kind: 'returned'; result: AgentToolResult } | { kind: 'threw'; error: unknown } | { kind: 'abandoned' };

const resultCodes = new Set<CallErrorCode>(['invalid_arguments', 'tool_failed', 'timeout', 'aborted', 'internal']);

/**
 * Runs one validated call through the scheduler: waits for its ticket, sends `activity-started`,
 * runs `execute` with the call's signal and `emit`, and pushes exactly one `result`, whatever
 * happens. When the call is aborted and the tool does not settle within `limits.abortGraceMs`, the
 * result is sent anyway (code `aborted`, `timeout` when the deadline fired), the lock released,
 * and a warning logged. A call whose unsent presentation events exceed `limits.maxQueuedEvents`
 * is aborted with `tool_failed`. The call's controller is aborted when the call ends, however it
 * ends.
 *
 * Hot path: when the ticket is granted at once, `activity-started` is pushed synchronously and
 * `execute` starts in the same tick; the AbortController is only created when someone reads the
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
// little, and tsx's keepNames does not rename a dozen closures per call).
class CallRun implements RunningCall {
  readonly done: Promise<void>;
  private controller: AbortController | undefined;
  private reason: CallAbort | undefined;
  private finished = false;
  // Events after the result is decided (a tool that kept going after its abort) are dropped.
  private emitting = true;
  private unsent = 0;
  // Set while `execute` runs: starts the abort grace.
  private graceStarter: (() => void) | undefined;
  private grace: NodeJS.Timeout | undefined;
  private settleTool: ((outcome: Outcome) => void) | undefined;
  private readonly cancelDeadline: () => void;
  private readonly context: ToolExecutionContext;

  constructor(readonly options: ExecuteCallOptions) {
    this.cancelDeadline = options.deadlines.add(options.deadlineMs, () =>
      this.abort('timeout', `the call ran past its deadline of ${options.deadlineMs} ms`),
    );
    this.context = new CallContext(this, options.now() + options.deadlineMs);
    this.done = this.run().then(
      (result) => this.finish(result),
      (error: unknown) =>
        this.finish(errorResult({ code: 'internal', message: `the sidecar failed running the call: ${errorMessage(error)}`, repairs: options.repairs })),
    );
  }

  abort(code: AbortCode, message: string): void {
    if (this.reason || this.finished) return;
    this.reason = new CallAbort(code, message);
    this.controller?.abort(this.reason);
    this.graceStarter?.();
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

  private runTool(): Promise<Outcome> {
    const { tool, params, limits } = this.options;
    return new Promise<Outcome>((resolve) => {
      this.settleTool = resolve;
      this.graceStarter = () => {
        this.graceStarter = undefined;
        this.grace = setTimeout(() => this.settle({ kind: 'abandoned' }), limits.abortGraceMs);
      };
      if (this.reason) this.graceStarter();
      try {
        Promise.resolve(tool.execute(params, this.context)).then(
          (result) => this.settle({ kind: 'returned', result }),
          (error: unknown) => this.settle({ kind: 'threw', error }),
        );
      } catch (error) {
        this.settle({ kind: 'threw', error });
      }
    });
  }

  /** The tool's outcome, first one wins (the abort grace may pass before the tool settles). */
  private settle(outcome: Outcome): void {
    const resolve = this.settleTool;
    if (!resolve) return;
    this.settleTool = undefined;
    this.graceStarter = undefined;
    if (this.grace) clearTimeout(this.grace);
    resolve(outcome);
  }

  private async run(): Promise<CallResult> {
    const { callId, tool, params, repairs, ticket, limits, logger, now, output } = this.options;
    let label = tool.name;
    if (!ticket.granted) {
      try {
        await ticket.ready(this.signal());
      } catch {
        return abortedResult(this.reason, label, repairs, 0);
      }
    }
    try {
      label = tool.describeActivity(params);
    } catch (error) {
      logger.warn('describeActivity threw', { callId, tool: tool.name, error: errorMessage(error) });
    }
    if (this.options.approve) {
      let decision: { approved: boolean; reason: string };
      try {
        decision = await this.options.approve(label, this.signal());
      } catch (error) {
        if (this.reason) return abortedResult(this.reason, label, repairs, 0);
        return errorResult({ code: 'denied', message: deniedMessage(tool.name, label, `the approval could not be asked: ${errorMessage(error)}`), label, repairs });
      }
      if (this.reason) return abortedResult(this.reason, label, repairs, 0);
      if (!decision.approved) return errorResult({ code: 'denied', message: deniedMessage(tool.name, label, decision.reason), label, repairs });
    }
    output.push({ type: 'activity-started', callId, label });
    const started = now();
    const outcome = await this.runTool();
    const durationMs = Math.max(0, Math.round(now() - started));
    if (outcome.kind === 'abandoned') {
      logger.warn('a tool ignored its abort signal; its result was sent without it', {
        callId,
        tool: tool.name,
        abortGraceMs: limits.abortGraceMs,
      });
      return abortedResult(this.reason, label, repairs, durationMs);
    }
    if (this.reason) return abortedResult(this.reason, label, repairs, durationMs);
    if (outcome.kind === 'threw') {
      const { error } = outcome;
      const code = isToolRuntimeError(error) && resultCodes.has(error.code as CallErrorCode) ? (error.code as CallErrorCode) : 'tool_failed';
      return errorResult({ code, message: `${tool.name} failed: ${errorMessage(error)}`, label, repairs, durationMs });
    }
    let completedLabel = label;
    try {
      completedLabel = tool.describeCompletedActivity?.(params, outcome.result) ?? label;
    } catch (error) {
      logger.warn('describeCompletedActivity threw', { callId, tool: tool.name, error: errorMessage(error) });
    }
    for (const event of outcome.result.presentation ?? []) this.pushPresentation(event);
    return successResult({ result: outcome.result, completedLabel, maxTextChars: limits.maxResultTextChars, repairs, durationMs });
  }

  private finish(result: CallResult): void {
    this.emitting = false;
    this.finished = true;
    this.cancelDeadline();
    this.options.ticket.release();
    if (this.controller && !this.controller.signal.aborted) this.controller.abort(callEnded);
    this.options.output.push({ type: 'result', callId: this.options.callId, result });
    this.options.onSettled(this.options.callId);
  }
}

/**
 * What the tool's `execute` gets. A class, not an object literal with a `get signal()`: V8 gives
 * every such literal a hidden class (map) of its own, and those maps, kept in the old generation,
 * held each finished call alive through young-generation GCs until a full GC (about 1 KB promoted
 * per call; most of the in-process call path's time went to GC). `signal` is read through the
 * prototype; `emit` and `remainingMs` stay own functions, so a tool may pass them around unbound.
 */
class CallContext implements ToolExecutionContext {
  readonly callId: string;
  readonly emit: (event: PresentationEvent) => Promise<void>;
  readonly remainingMs: () => number;

  constructor(
    private readonly run: CallRun,
    deadlineAt: number,
  ) {
    const { now } = run.options;
    this.callId = run.options.callId;
    this.emit = (event) => run.emit(event);
    this.remainingMs = () => deadlineAt - now();
  }

  get signal(): AbortSignal {
    return this.run.signal();
  }
}

function abortedResult(reason: CallAbort | undefined, label: string, repairs: string[], durationMs: number): CallResult {
  return errorResult({ code: reason?.code ?? 'aborted', message: reason?.message ?? 'the call was aborted', label, repairs, durationMs });
}

/** The model-facing message of a refused call: what, why, and not to retry blindly. */
function deniedMessage(toolName: string, label: string, reason: string): string {
  const what = label && label !== toolName ? `${toolName} (${label})` : toolName;
  const why = reason.trim() ? ` The reason given: ${reason.trim()}` : ' No reason was given.';
  return `This call of ${what} was not approved, so it did not run and nothing was changed.${why} Do not retry the same call unchanged; change the approach, or ask the user what they want instead.`;
}
