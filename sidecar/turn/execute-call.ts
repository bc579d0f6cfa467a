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
export function executeCall(options: {
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
  onSettled: () => void;
}): RunningCall {
  const { callId, tool, params, repairs, ticket, limits, logger, now, output } = options;
  let controller: AbortController | undefined;
  let reason: CallAbort | undefined;
  let finished = false;
  // Events after the result is decided (a tool that kept going after its abort) are dropped.
  let emitting = true;
  let unsent = 0;
  // Set while `execute` runs: starts the abort grace.
  let onAbortWhileRunning: (() => void) | undefined;

  const signal = (): AbortSignal => {
    if (!controller) {
      controller = new AbortController();
      if (reason) controller.abort(reason);
    }
    return controller.signal;
  };
  const abort = (code: AbortCode, message: string) => {
    if (reason || finished) return;
    reason = new CallAbort(code, message);
    controller?.abort(reason);
    onAbortWhileRunning?.();
  };
  const cancelDeadline = options.deadlines.add(options.deadlineMs, () =>
    abort('timeout', `the call ran past its deadline of ${options.deadlineMs} ms`),
  );

  const pushPresentation = (event: PresentationEvent) => {
    unsent++;
    output.push({ type: 'presentation', callId, event });
  };
  const emit = (event: PresentationEvent): Promise<void> => {
    if (!emitting) return resolved;
    pushPresentation({ kind: String(event.kind), payload: event.payload });
    if (unsent > limits.maxQueuedEvents) {
      // Stop taking events at once: the backlog is what must stay bounded.
      emitting = false;
      abort(
        'tool_failed',
        `${tool.name} emitted presentation events faster than the client reads them (more than ${limits.maxQueuedEvents} waiting to be sent); the call was stopped`,
      );
      return resolved;
    }
    return output.hasRoom || reason ? resolved : output.room(signal());
  };
  const context: ToolExecutionContext = {
    get signal() {
      return signal();
    },
    callId,
    emit,
  };

  const runTool = () =>
    new Promise<Outcome>((resolve) => {
      let grace: NodeJS.Timeout | undefined;
      const settle = (outcome: Outcome) => {
        onAbortWhileRunning = undefined;
        if (grace) clearTimeout(grace);
        resolve(outcome);
      };
      onAbortWhileRunning = () => {
        onAbortWhileRunning = undefined;
        grace = setTimeout(() => settle({ kind: 'abandoned' }), limits.abortGraceMs);
      };
      if (reason) onAbortWhileRunning();
      try {
        Promise.resolve(tool.execute(params, context)).then(
          (result) => settle({ kind: 'returned', result }),
          (error: unknown) => settle({ kind: 'threw', error }),
        );
      } catch (error) {
        settle({ kind: 'threw', error });
      }
    });

  const run = async (): Promise<CallResult> => {
    let label = tool.name;
    if (!ticket.granted) {
      try {
        await ticket.ready(signal());
      } catch {
        return abortedResult(reason, label, repairs, 0);
      }
    }
    try {
      label = tool.describeActivity(params);
    } catch (error) {
      logger.warn('describeActivity threw', { callId, tool: tool.name, error: errorMessage(error) });
    }
    output.push({ type: 'activity-started', callId, label });
    const started = now();
    const outcome = await runTool();
    const durationMs = Math.max(0, Math.round(now() - started));
    if (outcome.kind === 'abandoned') {
      logger.warn('a tool ignored its abort signal; its result was sent without it', {
        callId,
        tool: tool.name,
        abortGraceMs: limits.abortGraceMs,
      });
      return abortedResult(reason, label, repairs, durationMs);
    }
    if (reason) return abortedResult(reason, label, repairs, durationMs);
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
    for (const event of outcome.result.presentation ?? []) pushPresentation(event);
    return successResult({ result: outcome.result, completedLabel, maxTextChars: limits.maxResultTextChars, repairs, durationMs });
  };

  const finish = (result: CallResult) => {
    emitting = false;
    finished = true;
    cancelDeadline();
    ticket.release();
    if (controller && !controller.signal.aborted) controller.abort(callEnded);
    output.push({ type: 'result', callId, result });
    options.onSettled();
  };
  const done = run().then(finish, (error: unknown) =>
    finish(errorResult({ code: 'internal', message: `the sidecar failed running the call: ${errorMessage(error)}`, repairs })),
  );
  return {
    abort,
    presentationSent() {
      if (unsent > 0) unsent--;
    },
    done,
  };
}

function abortedResult(reason: CallAbort | undefined, label: string, repairs: string[], durationMs: number): CallResult {
  return errorResult({ code: reason?.code ?? 'aborted', message: reason?.message ?? 'the call was aborted', label, repairs, durationMs });
}
