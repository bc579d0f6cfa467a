import type { FunctionCallItem } from '../model/responses-model.js';
import { errorResult, type CallResult, type ToolTurn } from '../sidecar-client/sidecar-types.js';
import type { ResolvedCall, ToolCatalog } from './tool-catalog.js';
import type { TurnEvent } from './turn-events.js';

/** A call and its one result. */
export interface DispatchedCall {
  call: FunctionCallItem;
  result: CallResult;
}

/** Options of `dispatchCalls`. */
export interface DispatchCallsOptions {
  calls: FunctionCallItem[];
  catalog: ToolCatalog;
  turn: ToolTurn;
  /** The turn's signal: aborting it cancels every call in flight. */
  signal: AbortSignal;
  emit: (event: TurnEvent) => void;
  /** Each call's deadline in ms (0 or absent: the sidecar's default). */
  callDeadlineMs?: number;
  /**
   * Awaited before a call goes to the sidecar, with its position in `calls` (the turn's journal
   * records the call's intent there). When it throws, the call is not sent and gets a
   * `journal_failed` error result.
   */
  beforeSend?: (position: number, resolved: ResolvedCall) => Promise<void>;
  /** Awaited with each result before the call counts as settled (the journal records it there). */
  onResult?: (position: number, result: CallResult) => Promise<void>;
}

function localResult(callId: string, text: string, label: string, error?: { code: string; message: string }): CallResult {
  return error
    ? { ...errorResult(callId, error.code, text), completedLabel: label }
    : { callId, content: [{ type: 'text', text }], completedLabel: label, terminateTurn: false, repairs: [], durationMs: 0 };
}

/**
 * Runs one model response's function calls: parallel tools together, a sequential tool as a
 * barrier (it waits for every earlier call and holds back every later one). At most
 * `turn.maxCallsInFlight` calls are at the sidecar at once: the rest wait, in call order, for a
 * result to free a place (the sidecar refuses more with `too_many_calls`). The controller's own
 * `tool_search` and calls to deferred tools that were never loaded are answered locally.
 * Resolves with exactly one result per call, in call order; never rejects. Aborting `signal`
 * cancels the calls in flight (they still get their `aborted` results) and the queued ones are
 * sent already aborted, so they resolve `aborted` at once.
 */
export async function dispatchCalls(options: DispatchCallsOptions): Promise<DispatchedCall[]> {
  const { catalog, turn, signal, emit } = options;
  const results: Array<Promise<CallResult>> = [];
  let inFlight: Array<Promise<CallResult>> = [];
  const limit = turn.maxCallsInFlight && turn.maxCallsInFlight > 0 ? turn.maxCallsInFlight : Number.POSITIVE_INFINITY;
  let atSidecar = 0;
  let freed: (() => void) | undefined;
  /** Resolves once a place is free; only the dispatch loop waits here, so waiters keep call order. */
  const place = async () => {
    while (atSidecar >= limit) await new Promise<void>((resolve) => (freed = resolve));
  };
  const release = () => {
    atSidecar--;
    const wake = freed;
    freed = undefined;
    wake?.();
  };

  const start = (call: FunctionCallItem, resolved: ResolvedCall, position: number): Promise<CallResult> => {
    const settled = send(call, resolved, position);
    const onResult = options.onResult;
    return onResult ? settled.then(async (result) => (await onResult(position, result), result)) : settled;
  };
  const send = (call: FunctionCallItem, resolved: ResolvedCall, position: number): Promise<CallResult> => {
    if (resolved.kind === 'client-search') {
      const answer = catalog.search(call.arguments);
      const label = `Searched tools: loaded ${answer.loaded.length}`;
      emit({ type: 'activity-started', callId: call.call_id, name: call.name, label: 'Searching tools' });
      const result = localResult(call.call_id, answer.output, label, answer.isError ? { code: 'invalid_arguments', message: answer.output } : undefined);
      emit({ type: 'activity-completed', callId: call.call_id, name: call.name, label, durationMs: 0, ...(result.error ? { error: result.error } : {}) });
      return Promise.resolve(result);
    }
    if (resolved.kind === 'not-loaded') {
      const message =
        `The tool "${call.name}" is not loaded yet. Call tool_search with a description of what you need ` +
        'first; once it is loaded you can call it.';
      const result = localResult(call.call_id, message, `Refused ${call.name}: not loaded`, { code: 'unknown_tool', message });
      emit({ type: 'activity-completed', callId: call.call_id, name: call.name, label: result.completedLabel, durationMs: 0, error: { code: 'unknown_tool', message } });
      return Promise.resolve(result);
    }
    atSidecar++;
    const beforeSend = options.beforeSend;
    if (beforeSend) {
      // Recorded before it is sent: a runner that dies after this knows the call may have run.
      return beforeSend(position, resolved).then(
        () => sendToSidecar(call, resolved),
        (error: unknown) => {
          release();
          const message = `This call to ${call.name} was not run: its intent could not be journaled (${error instanceof Error ? error.message : String(error)}).`;
          return localResult(call.call_id, message, `Not run ${call.name}: journal failed`, { code: 'journal_failed', message });
        },
      );
    }
    return sendToSidecar(call, resolved);
  };
  const sendToSidecar = (call: FunctionCallItem, resolved: Extract<ResolvedCall, { kind: 'sidecar' }>): Promise<CallResult> => {
    const handle = turn.call(
      {
        callId: call.call_id,
        name: resolved.name,
        ...(resolved.namespace ? { namespace: resolved.namespace } : {}),
        argumentsJson: call.arguments,
        ...(options.callDeadlineMs ? { deadlineMs: options.callDeadlineMs } : {}),
      },
      { signal },
    );
    return (async () => {
      let label = '';
      for await (const event of handle) {
        if (event.type === 'activity-started') {
          label = event.label;
          emit({ type: 'activity-started', callId: call.call_id, name: call.name, ...(resolved.namespace ? { namespace: resolved.namespace } : {}), label });
        } else if (event.type === 'presentation') {
          emit({ type: 'presentation', callId: call.call_id, kind: event.kind, payload: event.payload });
        }
      }
      const result = await handle.result;
      release();
      emit({
        type: 'activity-completed',
        callId: call.call_id,
        name: call.name,
        label: result.completedLabel || label || call.name,
        durationMs: result.durationMs,
        ...(result.error ? { error: result.error } : {}),
        ...(result.repairs.length > 0 ? { repairs: result.repairs } : {}),
        output: resultPreview(result),
      });
      return result;
    })();
  };

  for (const [position, call] of options.calls.entries()) {
    const resolved = catalog.resolve(call);
    const sequential = resolved.kind === 'sidecar' && resolved.tool?.executionMode === 'sequential';
    // Parallel calls under the limit start in the same tick, as before the limit was known.
    if (resolved.kind === 'sidecar' && atSidecar >= limit) await place();
    if (sequential) {
      await Promise.all(inFlight);
      const result = start(call, resolved, position);
      results.push(result);
      await result;
      inFlight = [];
    } else {
      const result = start(call, resolved, position);
      results.push(result);
      inFlight.push(result);
    }
  }
  const settled = await Promise.all(results);
  return options.calls.map((call, index) => ({ call, result: settled[index] as CallResult }));
}

/** The start of a result's text and JSON parts, for the turn events (the console shows it). */
function resultPreview(result: CallResult, maxChars = 4_000): string {
  const text = result.content.map((part) => (part.type === 'text' ? part.text : part.type === 'json' ? part.json : `[${part.type}]`)).join('\n');
  return text.length > maxChars ? `${text.slice(0, maxChars)}… (${text.length - maxChars} more characters)` : text;
}
