import { errorMessage, isToolRuntimeError } from '../../src/index.js';
import { outputText, type FunctionCallItem, type ResponseItem, type ResponsesModel } from '../model/responses-model.js';
import { errorResult, type CallResult, type ToolTurn } from '../sidecar-client/sidecar-types.js';
import { cutOffResult, isCutOff, stoppedResult } from './calls-not-run.js';
import type { ToolSearchMode } from './collect-provider-tools.js';
import { dispatchCalls } from './dispatch-calls.js';
import { callsOfResponse, createStreamCollector, mergeNativePieces, outputPieceOf, type CommandStreams, type LoopCall } from './native-calls.js';
import { planNativeTools } from './native-tools.js';
import { createToolCatalog, type ResolvedCall } from './tool-catalog.js';
import { controllerTelemetry } from '../telemetry/controller-telemetry.js';
import type { TurnEvent, TurnStatus } from './turn-events.js';
import { callsOf, INTERRUPTED_OUTPUT, openTurnStart, replayJournal, type PendingResponse, type TurnJournal, type TurnRecord } from './turn-journal.js';
import type { StopAt } from './turn-step-seam.js';

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
   * The turn's journal. Everything the turn does is recorded in it as it happens; when it holds an
   * open turn (records after its last `turn_end`), the turn resumes from there (the prompt was
   * recorded then and is not used); otherwise a new turn starts after the journal's history.
   */
  journal?: TurnJournal;
  /** Tools that may run again when their runner died with them in flight, besides read-only ones. */
  idempotentTools?: readonly string[];
  /** A test seam: awaited at each named step (`after-model-response:N`, `during-call:K`, `after-call:K`). */
  stopAt?: StopAt;
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
  /** The result that ended a `terminated` turn: its tool and details (a task's accepted submission). */
  terminatedBy?: { name: string; details: unknown };
}

/** A call's settled result, live or replayed from the journal: what the loop needs of it. */
interface Settled {
  output: ResponseItem;
  terminateTurn: boolean;
  error?: { code: string; message: string };
  details?: unknown;
}

function settled(call: LoopCall, result: CallResult, streams?: (callId: string) => CommandStreams | undefined): Settled {
  return {
    // A function call's output, or a native call's piece of its output item (native-calls.ts).
    output: outputPieceOf(call, result, streams),
    terminateTurn: result.terminateTurn,
    ...(result.error ? { error: result.error } : {}),
    ...(result.terminateTurn && result.details !== undefined ? { details: result.details } : {}),
  };
}

/** The text of a function_call_output item (a terminating tool's text). */
function outputItemText(item: ResponseItem): string {
  const output = item.output;
  if (typeof output === 'string') return output;
  return Array.isArray(output) ? output.map((part: { type?: string; text?: string }) => (part.type === 'input_text' ? (part.text ?? '') : '')).join('') : '';
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
 *
 * With a `journal`, each model response, each call's intent (before it is sent) and each result is
 * recorded as it happens, and an open turn in the journal resumes: finished model calls are not
 * asked again, finished calls not run again (their recorded outputs go to the model), a call that
 * was in flight runs again when read-only or idempotent and otherwise gets `INTERRUPTED_OUTPUT`. An
 * aborted turn records no end and no aborted results, so it resumes later as if its runner had died.
 */
export async function runTurn(options: RunTurnOptions): Promise<TurnOutcome> {
  // With telemetry on, the model and the tool turn come back wrapped: each request and call a span.
  const traced = controllerTelemetry()?.startTurn({ turnId: options.turnId ?? '', model: options.model, turn: options.turn });
  const model = traced ? traced.model : options.model;
  const turn = traced ? traced.turn : options.turn;
  const signal = options.signal ?? new AbortController().signal;
  const emit = options.onEvent ?? (() => {});
  const maxModelCalls = options.maxModelCalls ?? 50;
  const stopAt = options.stopAt ?? (() => undefined);
  const journal = options.journal;
  const idempotent = new Set(options.idempotentTools ?? []);
  const native = planNativeTools(turn.tools, options.nativeTools === true);
  const catalog = createToolCatalog({
    tools: turn.tools,
    ...(native.providerTools.length > 0 ? { native: { providerTools: native.providerTools, replaced: native.replaced } } : {}),
    toolSearch: options.toolSearch ?? 'client',
    flattenNamespaces: options.flattenNamespaces ?? false,
    ...(options.searchLimit ? { searchLimit: options.searchLimit } : {}),
  });
  const instructions = [options.baseInstructions ?? DEFAULT_BASE_INSTRUCTIONS, turn.instructions].filter(Boolean).join('\n\n');
  const promptItems: ResponseItem[] =
    typeof options.prompt === 'string' ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: options.prompt }] }] : [...options.prompt];
  const records = journal?.records ?? [];
  const resuming = journal !== undefined && openTurnStart(records) < records.length;
  const replay = journal ? replayJournal(records) : { input: [] as ResponseItem[], modelCalls: 0 };
  const input: ResponseItem[] = resuming ? replay.input : [...replay.input, ...promptItems];
  let pending: PendingResponse | undefined = resuming ? replay.pending : undefined;
  let modelCalls = resuming ? replay.modelCalls : 0;
  let callNumber = resuming ? records.slice(openTurnStart(records)).filter((record) => record.kind === 'call_intent').length : 0;
  let lastText = '';
  let journalError: string | undefined;
  const record = async (entry: TurnRecord): Promise<boolean> => {
    if (!journal || journalError) return !journalError;
    try {
      await journal.append(entry);
      return true;
    } catch (error) {
      journalError = `the turn's journal could not be written: ${errorMessage(error)}`;
      return false;
    }
  };

  const finish = async (status: TurnStatus, finalText: string, error?: string, terminatedBy?: TurnOutcome['terminatedBy']): Promise<TurnOutcome> => {
    if (journalError) [status, error] = ['journal_failed', journalError];
    // An aborted turn has no end in the journal: it resumes later, as if its runner had died.
    else if (journal && status !== 'aborted' && !(await record({ kind: 'turn_end', status, finalText, modelCalls, ...(error ? { error } : {}) }))) {
      [status, error] = ['journal_failed', journalError];
    }
    traced?.end(status, error);
    emit({ type: 'turn-finished', status, finalText, modelCalls, ...(error ? { error } : {}) });
    return { status, finalText, input, modelCalls, ...(error ? { error } : {}), ...(terminatedBy ? { terminatedBy } : {}) };
  };

  // Tools loaded by client-side searches of the open turn are loaded again, as they were.
  if (resuming) {
    for (const entry of records.slice(openTurnStart(records))) {
      if (entry.kind !== 'model_response') continue;
      for (const call of callsOf(entry.output)) if (catalog.resolve(call).kind === 'client-search') catalog.search(call.arguments);
    }
  }
  const pendingCalls = pending ? callsOf(pending.response.output) : [];
  const inFlight = pending ? pendingCalls.map((_, index) => index).filter((index) => !pending!.results.has(index) && pending!.intents.has(index)) : [];
  const rerun = inFlight.filter((index) => pending!.intents.get(index)!.rerun);
  emit({
    type: 'turn-started',
    turnId: options.turnId ?? '',
    model: model.description,
    tools: turn.tools.length,
    deferredTools: turn.tools.filter((tool) => tool.deferLoading).length,
    ...(resuming ? { resumed: { modelCalls, callResults: records.slice(openTurnStart(records)).filter((entry) => entry.kind === 'call_result').length, rerun: rerun.length, interrupted: inFlight.length - rerun.length } } : {}),
  });
  if (journal && !resuming && !(await record({ kind: 'input', items: promptItems }))) return finish('journal_failed', '');

  for (;;) {
    let response;
    const prior = pending;
    pending = undefined;
    if (prior) response = prior.response;
    else {
      if (signal.aborted) return finish('aborted', lastText, 'the turn was aborted');
      if (modelCalls >= maxModelCalls) return finish('max_model_calls', lastText, `the model-call limit is ${maxModelCalls}`);
      const tools = catalog.providerTools();
      emit({ type: 'model-request', iteration: modelCalls + 1, inputItems: input.length, tools: tools.length });
      try {
        // The loop's own array, not a copy per call (O(items) each time): the loop appends to it only
        // after create settles, and ModelRequest says a model must not keep it past that.
        response = await model.create({ instructions, input, tools }, { signal });
      } catch (error) {
        if (signal.aborted || isToolRuntimeError(error, 'aborted')) return finish('aborted', lastText, 'the turn was aborted');
        return finish('model_error', lastText, errorMessage(error));
      }
      modelCalls++;
      const responseRecord: TurnRecord = { kind: 'model_response', id: response.id, output: response.output, ...(response.usage ? { usage: response.usage } : {}), ...(response.status ? { status: response.status } : {}), ...(response.reason !== undefined ? { reason: response.reason } : {}) };
      if (!(await record(responseRecord))) return finish('journal_failed', lastText);
      input.push(...response.output);
      await stopAt(`after-model-response:${modelCalls}`);
    }
    // Function calls as they are, native calls as calls of their sidecar tools (one per shell command).
    const loopCalls = callsOfResponse(response, native);
    const calls = loopCalls.map(({ call }) => call);
    // stdout and stderr of native shell commands come from their `command.output` events.
    const streams = loopCalls.some((call) => call.native?.kind === 'shell') ? createStreamCollector() : undefined;
    emit({
      type: 'model-response',
      iteration: modelCalls,
      responseId: response.id,
      ...(response.usage ? { usage: response.usage } : {}),
      functionCalls: calls.length,
      outputItems: response.output.length,
      ...(response.status ? { status: response.status, reason: response.reason ?? '' } : {}),
    });
    const text = outputText(response.output);
    lastText = text || lastText;
    // One result per call, by position: the journal's, or settled now.
    const results: Array<Settled | undefined> = calls.map((_, index) => {
      const recorded = prior?.results.get(index);
      return recorded ? { output: recorded.output, terminateTurn: recorded.terminateTurn, ...(recorded.error ? { error: recorded.error } : {}), ...(recorded.details !== undefined ? { details: recorded.details } : {}) } : undefined;
    });
    const settle = async (index: number, result: CallResult): Promise<boolean> => {
      const call = calls[index] as FunctionCallItem;
      results[index] = settled(loopCalls[index] as LoopCall, result, streams?.get);
      const done = results[index]!;
      return record({
        kind: 'call_result', callIndex: index, callId: call.call_id, name: call.name, output: done.output, label: result.completedLabel, terminateTurn: done.terminateTurn,
        ...(done.error ? { error: done.error } : {}), ...(done.details !== undefined ? { details: done.details } : {}),
      });
    };
    const recordOutputs = () => {
      input.push(...mergeNativePieces(results.flatMap((result) => (result ? [result.output] : []))));
    };
    const notRun = async (why: string) => {
      for (const [index, call] of calls.entries()) if (!results[index]) await settle(index, stoppedResult(call, why));
      recordOutputs();
    };
    if (response.status === 'failed' || response.status === 'cancelled') {
      const reason = `the model response ${response.status}: ${response.reason ?? 'no reason given'}`;
      await notRun(`because ${reason}`);
      return finish('model_failed', lastText, reason);
    }
    if (calls.length === 0) {
      if (response.status === 'incomplete') return finish('incomplete', text, `the model's answer was cut off (${response.reason ?? 'no reason given'})`);
      return finish('completed', text);
    }
    if (modelCalls >= maxModelCalls) {
      await notRun(`at its limit of ${maxModelCalls} model calls, so no model would read this output`);
      return finish('max_model_calls', lastText, `the model was called ${maxModelCalls} times and still asked for tools`);
    }

    // A call cut off mid-arguments never runs; the complete calls beside it do. A call its dead runner
    // had sent runs again only when that cannot change anything twice.
    const toRun: number[] = [];
    for (const [index, call] of calls.entries()) {
      if (results[index]) continue;
      const intent = prior?.intents.get(index);
      // A native call refused as malformed never runs either.
      const cutOff = loopCalls[index]?.refused ?? (isCutOff(call, response) ? cutOffResult(call, response.reason) : undefined);
      const interrupted = intent && !intent.rerun ? { ...errorResultFor(call, 'interrupted', INTERRUPTED_OUTPUT), completedLabel: `Interrupted ${call.name}: outcome unknown` } : undefined;
      const local = cutOff ?? interrupted;
      if (!local) {
        toRun.push(index);
        continue;
      }
      emit({ type: 'activity-completed', callId: call.call_id, name: call.name, label: local.completedLabel, durationMs: 0, error: local.error! });
      await settle(index, local);
    }
    const sent = new Map<number, number>();
    const dispatched = await dispatchCalls({
      calls: toRun.map((index) => calls[index] as FunctionCallItem),
      catalog,
      turn,
      signal,
      emit: streams
        ? (event) => {
            if (event.type === 'presentation' && event.kind === 'command.output') streams.add(event.callId, event.payload);
            emit(event);
          }
        : emit,
      ...(options.callDeadlineMs ? { callDeadlineMs: options.callDeadlineMs } : {}),
      ...(journal || options.stopAt
        ? {
            beforeSend: async (position: number, resolved: ResolvedCall) => {
              const index = toRun[position]!;
              const call = calls[index] as FunctionCallItem;
              // Read-only, or declared idempotent by the tool itself or by the caller's list.
              const readOnly = resolved.kind === 'sidecar' && (resolved.tool?.readOnly === true || resolved.tool?.idempotent === true);
              sent.set(index, ++callNumber);
              if (!(await record({ kind: 'call_intent', callIndex: index, callId: call.call_id, name: call.name, rerun: readOnly || idempotent.has(call.name) }))) throw new Error(journalError);
            },
            onResult: async (position: number, result: CallResult) => {
              const index = toRun[position]!;
              const number = sent.get(index);
              if (number !== undefined) await stopAt(`during-call:${number}`);
              // A call the turn's abort ended has no result worth keeping: it stays in flight in the journal.
              if (signal.aborted && result.error?.code === 'aborted') {
                results[index] = settled(loopCalls[index] as LoopCall, result, streams?.get);
                return;
              }
              await settle(index, result);
              if (number !== undefined) await stopAt(`after-call:${number}`);
            },
          }
        : {}),
    });
    dispatched.forEach(({ result }, position) => {
      const index = toRun[position]!;
      if (!results[index]) results[index] = settled(loopCalls[index] as LoopCall, result, streams?.get);
    });
    recordOutputs();
    const terminating = calls.map((call, index) => ({ call, result: results[index]! })).find(({ result }) => result.terminateTurn && !result.error);
    if (terminating) {
      const terminatedBy = { name: terminating.call.name, details: terminating.result.details };
      return finish('terminated', text || outputItemText(terminating.result.output), undefined, terminatedBy);
    }
    const unavailable = results.find((result) => result?.error?.code === 'sidecar_unavailable');
    if (turn.failure || unavailable) {
      return finish('sidecar_unavailable', lastText, turn.failure?.message ?? unavailable?.error?.message);
    }
    if (journalError) return finish('journal_failed', lastText);
    if (signal.aborted) return finish('aborted', lastText, 'the turn was aborted');
  }
}

function errorResultFor(call: FunctionCallItem, code: string, message: string): CallResult {
  return errorResult(call.call_id, code, message);
}
