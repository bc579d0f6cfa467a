import { errorMessage, isToolRuntimeError, type AgentToolResult, type Logger, type WorkerAgentTool } from '../../src/index.js';
import type { SidecarLimits } from '../config.js';
import { errorResult, successResult } from './build-result.js';
import type { CallTicket } from './call-scheduler.js';
import type { CallErrorCode, CallResult, TurnEvent } from './turn-event.js';

/** A call that has been scheduled: it can be aborted until its result is sent. */
export interface RunningCall {
  /** Aborts the call with `code` (`aborted` or `timeout`) as the reason its result will carry. */
  abort(code: 'aborted' | 'timeout', message: string): void;
  /** Settles once the call's result has been pushed. */
  readonly done: Promise<void>;
}

/** Why a call's signal fired. */
class CallAbort extends Error {
  override readonly name = 'AbortError';
  constructor(
    readonly code: 'aborted' | 'timeout',
    message: string,
  ) {
    super(message);
  }
}

// Aborting a finished call's controller (so its children exit) is the common path: share one
// reason rather than capture a stack trace per call.
const callEnded = new CallAbort('aborted', 'the call ended');

type Outcome = { kind: 'returned'; result: AgentToolResult } | { kind: 'threw'; error: unknown } | { kind: 'abandoned' };

const resultCodes = new Set<CallErrorCode>(['invalid_arguments', 'tool_failed', 'timeout', 'aborted', 'internal']);

/**
 * Runs one validated call through the scheduler: waits for its ticket, sends `activity-started`,
 * runs `execute` with the call's signal and `emit`, and pushes exactly one `result`, whatever
 * happens. When the signal fires and the tool does not settle within `limits.abortGraceMs`, the
 * result is sent anyway (code `aborted`, or `timeout` when the deadline fired), the lock released,
 * and a warning logged. The call's controller is aborted when the call ends, however it ends.
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
  push: (event: TurnEvent) => void;
  onSettled: () => void;
}): RunningCall {
  const { callId, tool, params, repairs, ticket, limits, logger, now, push } = options;
  const controller = new AbortController();
  const signal = controller.signal;
  const abort = (code: 'aborted' | 'timeout', message: string) => {
    if (!signal.aborted) controller.abort(new CallAbort(code, message));
  };
  // Our own timer rather than AbortSignal.timeout, so it is cleared the moment the call ends.
  const deadline = setTimeout(() => abort('timeout', `the call ran past its deadline of ${options.deadlineMs} ms`), options.deadlineMs);

  const run = async (): Promise<CallResult> => {
    let label = tool.name;
    try {
      await ticket.ready(signal);
    } catch {
      return abortedResult(signal, label, repairs, 0);
    }
    try {
      label = tool.describeActivity(params);
    } catch (error) {
      logger.warn('describeActivity threw', { callId, tool: tool.name, error: errorMessage(error) });
    }
    push({ type: 'activity-started', callId, label });
    const started = now();
    const outcome = await runTool();
    const durationMs = Math.max(0, Math.round(now() - started));
    if (outcome.kind === 'abandoned') {
      logger.warn('a tool ignored its abort signal; its result was sent without it', {
        callId,
        tool: tool.name,
        abortGraceMs: limits.abortGraceMs,
      });
      return abortedResult(signal, label, repairs, durationMs);
    }
    if (signal.aborted) return abortedResult(signal, label, repairs, durationMs);
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
    for (const event of outcome.result.presentation ?? []) push({ type: 'presentation', callId, event });
    return successResult({ result: outcome.result, completedLabel, maxTextChars: limits.maxResultTextChars, repairs, durationMs });
  };

  // Events after the result is decided (a tool that kept going after its abort) are dropped.
  let emitting = true;
  const emit = (event: { kind: string; payload: unknown }) => {
    if (emitting) push({ type: 'presentation', callId, event: { kind: String(event.kind), payload: event.payload } });
  };

  const runTool = () =>
    new Promise<Outcome>((resolve) => {
      let grace: NodeJS.Timeout | undefined;
      const onAbort = () => {
        grace = setTimeout(() => resolve({ kind: 'abandoned' }), limits.abortGraceMs);
      };
      const settle = (outcome: Outcome) => {
        signal.removeEventListener('abort', onAbort);
        if (grace) clearTimeout(grace);
        resolve(outcome);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        Promise.resolve(tool.execute(params, { signal, callId, emit })).then(
          (result) => settle({ kind: 'returned', result }),
          (error: unknown) => settle({ kind: 'threw', error }),
        );
      } catch (error) {
        settle({ kind: 'threw', error });
      }
    });

  const done = run()
    .catch((error: unknown) => errorResult({ code: 'internal', message: `the sidecar failed running the call: ${errorMessage(error)}`, repairs }))
    .then((result) => {
      emitting = false;
      clearTimeout(deadline);
      ticket.release();
      if (!signal.aborted) controller.abort(callEnded);
      push({ type: 'result', callId, result });
      options.onSettled();
    });
  return { abort, done };
}

function abortedResult(signal: AbortSignal, label: string, repairs: string[], durationMs: number): CallResult {
  const reason: unknown = signal.reason;
  const code = reason instanceof CallAbort ? reason.code : 'aborted';
  const message = reason instanceof CallAbort ? reason.message : errorMessage(reason);
  return errorResult({ code, message, label, repairs, durationMs });
}
