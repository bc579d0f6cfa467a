import { errorMessage, isToolRuntimeError } from '../../src/index.js';
import { outputText, type FunctionCallItem, type ResponseItem, type ResponsesModel } from '../model/responses-model.js';
import type { CallResult, ToolTurn } from '../sidecar-client/sidecar-types.js';
import { cutOffResult, isCutOff, stoppedResult } from './calls-not-run.js';
import type { ToolSearchMode } from './collect-provider-tools.js';
import { dispatchCalls } from './dispatch-calls.js';
import { callsOfResponse, createStreamCollector, outputItemsOf, type LoopCall } from './native-calls.js';
import { planNativeTools } from './native-tools.js';
import { createToolCatalog } from './tool-catalog.js';
import { toFunctionOutput } from './to-function-output.js';
import { controllerTelemetry } from '../telemetry/controller-telemetry.js';
import type { TurnEvent, TurnStatus } from './turn-events.js';

/** Options of `runTurn`. */
export interface RunTurnOptions {
  model: ResponsesModel;
  /** The open sidecar turn (its tools and instructions). */
  turn: ToolTurn;
  /** The user's message, or input items to start from. */
  prompt: string | ResponseItem[];
  /** The base prompt; the tool set's instructions are appended to it. */
  baseInstructions?: string;
  /** Default `client`. */
  toolSearch?: ToolSearchMode;
  flattenNamespaces?: boolean;
  /** Default 50. */
  maxModelCalls?: number;
  /** How many tools a client-side search loads (default 8). */
  searchLimit?: number;
  /** Each call's deadline in ms (default: the sidecar's). */
  callDeadlineMs?: number;
  /** Aborts the model request and every call in flight. */
  signal?: AbortSignal;
  onEvent?: (event: TurnEvent) => void;
  /** For events and logs. */
  turnId?: string;
  /**
   * Offer the provider's own `apply_patch` and `shell` tools in place of the sidecar tools that
   * execute them (see native-tools.ts; `nativeToolsFor` decides from the model). Default false.
   */
  nativeTools?: boolean;
}

/** How a turn ended, with everything it produced. */
export interface TurnOutcome {
  status: TurnStatus;
  /** The model's last answer (or the terminating tool's text). */
  finalText: string;
  /** Every input item at the end: the prompt, the model's items, one output per call. */
  input: ResponseItem[];
  modelCalls: number;
  /** A one-line reason when the status is not `completed` / `terminated`. */
  error?: string;
}

/** Records one output item per call item, in call order (a native call's in the API's own shape). */
function recordOutputs(input: ResponseItem[], calls: LoopCall[], results: CallResult[], streams?: Parameters<typeof outputItemsOf>[2]): void {
  if (calls.every((call) => !call.native)) {
    // The common case, without the native mapping's bookkeeping.
    calls.forEach(({ call }, index) => input.push({ type: 'function_call_output', call_id: call.call_id, output: toFunctionOutput((results[index] as CallResult).content) }));
    return;
  }
  input.push(...outputItemsOf(calls, results, streams));
}

/** The default base prompt. */
export const DEFAULT_BASE_INSTRUCTIONS =
  'You are an agent working in a user\'s workspace through tools. Plan with the todo list when the ' +
  'task has several steps, use the tools to look before you answer, and cite what they returned.';

/**
 * Runs one agent turn: calls the model with the instructions, the input items and the tools;
 * dispatches every function call to the sidecar; appends exactly one function_call_output per
 * call, in call order; repeats until the model calls no tool, a result terminates the turn, the
 * sidecar fails, the signal aborts, or `maxModelCalls` is reached. Never throws: failures are a
 * status on the outcome (and a `turn-finished` event).
 *
 * A response that did not complete, streamed or not: a call cut off mid-arguments never runs and
 * gets an error output saying so (the model can retry with less), the complete calls beside it
 * run; an answer cut off ends the turn `incomplete`; a `failed` or `cancelled` response ends it
 * `model_failed` with its reason. The calls of the last response the model-call limit allows are
 * not run (no model would read their outputs): each gets an output saying the turn stopped.
 */
export async function runTurn(options: RunTurnOptions): Promise<TurnOutcome> {
  // With telemetry on, the model and the tool turn come back wrapped: each request and call a span.
  const traced = controllerTelemetry()?.startTurn({ turnId: options.turnId ?? '', model: options.model, turn: options.turn });
  const model = traced ? traced.model : options.model;
  const turn = traced ? traced.turn : options.turn;
  const signal = options.signal ?? new AbortController().signal;
  const emit = options.onEvent ?? (() => {});
  const maxModelCalls = options.maxModelCalls ?? 50;
  const native = planNativeTools(turn.tools, options.nativeTools === true);
  const catalog = createToolCatalog({
    tools: turn.tools,
    ...(native.providerTools.length > 0 ? { native: { providerTools: native.providerTools, replaced: native.replaced } } : {}),
    toolSearch: options.toolSearch ?? 'client',
    flattenNamespaces: options.flattenNamespaces ?? false,
    ...(options.searchLimit ? { searchLimit: options.searchLimit } : {}),
  });
  const instructions = [options.baseInstructions ?? DEFAULT_BASE_INSTRUCTIONS, turn.instructions].filter(Boolean).join('\n\n');
  const input: ResponseItem[] =
    typeof options.prompt === 'string'
      ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: options.prompt }] }]
      : [...options.prompt];
  let modelCalls = 0;
  let lastText = '';

  const finish = (status: TurnStatus, finalText: string, error?: string): TurnOutcome => {
    traced?.end(status, error);
    emit({ type: 'turn-finished', status, finalText, modelCalls, ...(error ? { error } : {}) });
    return { status, finalText, input, modelCalls, ...(error ? { error } : {}) };
  };

  emit({
    type: 'turn-started',
    turnId: options.turnId ?? '',
    model: model.description,
    tools: turn.tools.length,
    deferredTools: turn.tools.filter((tool) => tool.deferLoading).length,
  });

  for (;;) {
    if (signal.aborted) return finish('aborted', lastText, 'the turn was aborted');
    if (modelCalls >= maxModelCalls) return finish('max_model_calls', lastText, `the model-call limit is ${maxModelCalls}`);
    const tools = catalog.providerTools();
    emit({ type: 'model-request', iteration: modelCalls + 1, inputItems: input.length, tools: tools.length });
    let response;
    try {
      // The loop's own array, not a copy per call (O(items) each time): the loop appends to it only
      // after create settles, and ModelRequest says a model must not keep it past that.
      response = await model.create({ instructions, input, tools }, { signal });
    } catch (error) {
      if (signal.aborted || isToolRuntimeError(error, 'aborted')) return finish('aborted', lastText, 'the turn was aborted');
      return finish('model_error', lastText, errorMessage(error));
    }
    modelCalls++;
    const loopCalls = callsOfResponse(response, native);
    const calls = loopCalls.map(({ call }) => call);
    emit({
      type: 'model-response',
      iteration: modelCalls,
      responseId: response.id,
      ...(response.usage ? { usage: response.usage } : {}),
      functionCalls: calls.length,
      outputItems: response.output.length,
      ...(response.status ? { status: response.status, reason: response.reason ?? '' } : {}),
    });
    input.push(...response.output);
    const text = outputText(response.output);
    lastText = text || lastText;
    const notRun = (why: string) => recordOutputs(input, loopCalls, calls.map((call) => stoppedResult(call, why)));
    if (response.status === 'failed' || response.status === 'cancelled') {
      const reason = `the model response ${response.status}: ${response.reason ?? 'no reason given'}`;
      notRun(`because ${reason}`);
      return finish('model_failed', lastText, reason);
    }
    if (calls.length === 0) {
      if (response.status === 'incomplete') return finish('incomplete', text, `the model's answer was cut off (${response.reason ?? 'no reason given'})`);
      return finish('completed', text);
    }
    if (modelCalls >= maxModelCalls) {
      notRun(`at its limit of ${maxModelCalls} model calls, so no model would read this output`);
      return finish('max_model_calls', lastText, `the model was called ${maxModelCalls} times and still asked for tools`);
    }

    // A call cut off mid-arguments never runs, nor a native call refused as malformed; the complete calls beside them do.
    const cutOff = loopCalls.map(({ call, refused }) => refused ?? (isCutOff(call, response) ? cutOffResult(call, response.reason) : undefined));
    cutOff.forEach((result, index) => {
      const call = calls[index] as FunctionCallItem;
      if (result) emit({ type: 'activity-completed', callId: call.call_id, name: call.name, label: result.completedLabel, durationMs: 0, error: result.error! });
    });
    // stdout and stderr of native shell commands come from their `command.output` events.
    const streams = native.shell ? createStreamCollector() : undefined;
    const shellCalls = streams ? new Set(loopCalls.filter((call) => call.native?.kind === 'shell').map(({ call }) => call.call_id)) : undefined;
    const dispatched = await dispatchCalls({
      calls: calls.filter((_, index) => !cutOff[index]),
      catalog,
      turn,
      signal,
      emit: streams && shellCalls && shellCalls.size > 0
        ? (event) => {
            if (event.type === 'presentation' && event.kind === 'command.output' && shellCalls.has(event.callId)) streams.add(event.callId, event.payload);
            emit(event);
          }
        : emit,
      ...(options.callDeadlineMs ? { callDeadlineMs: options.callDeadlineMs } : {}),
    });
    // Dispatched results come in the order of the calls sent (call ids may repeat: match by position).
    let next = 0;
    recordOutputs(input, loopCalls, calls.map((_, index) => cutOff[index] ?? (dispatched[next++]?.result as CallResult)), streams?.get);
    const terminating = dispatched.find(({ result }) => result.terminateTurn && !result.error);
    if (terminating) {
      const toolText = terminating.result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
      return finish('terminated', text || toolText);
    }
    const unavailable = dispatched.find(({ result }) => result.error?.code === 'sidecar_unavailable');
    if (turn.failure || unavailable) {
      return finish('sidecar_unavailable', lastText, turn.failure?.message ?? unavailable?.result.error?.message);
    }
    if (signal.aborted) return finish('aborted', lastText, 'the turn was aborted');
  }
}
