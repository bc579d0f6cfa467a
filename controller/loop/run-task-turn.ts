/**
 * The workflow task turn's contract, around `runTurn`: the task ends only through an accepted
 * `submit_result`; a rejected submission keeps the turn going (the model reads the reasons); an
 * answer without a submission gets exactly one repair instruction, and a second one fails the
 * attempt.
 */
import { isJSONObject } from '../../src/index.js';
import type { ResponseItem } from '../model/responses-model.js';
import type { CallHandle, CallRequest, CallResult, ToolTurn } from '../sidecar-client/sidecar-types.js';
import { runTurn, type RunTurnOptions, type TurnOutcome } from './run-turn.js';
import { endedTurnAt } from './turn-journal.js';
import type { TurnStatus } from './turn-events.js';

/** The tool that ends a task turn. */
export const SUBMIT_RESULT_TOOL = 'submit_result';

/** The base prompt of a task turn. */
export const TASK_BASE_INSTRUCTIONS =
  'You are running one task of a workflow, isolated from the conversation that started it. Do the task ' +
  'with the tools you are given, then call submit_result with your result as its `result` argument, ' +
  'matching the schema. The task ends only when a result is accepted; if it is rejected, fix it and ' +
  'submit again.';

/** The one repair instruction, sent after an answer without a submission. */
export const REPAIR_INSTRUCTION =
  'You answered without calling submit_result. This task ends only through submit_result: call it now ' +
  'with your result as the `result` argument, matching the schema. Another answer without it fails the task.';

/** How a task turn ended. */
export type TaskTurnOutcome =
  | { status: 'submitted'; result: unknown; modelCalls: number; repaired: boolean; rejectedSubmissions: number }
  | {
      status: 'failed';
      /** The loop's own status when the loop stopped for another reason than prose. */
      turnStatus: TurnStatus;
      /** One line for logs and the store. */
      reason: string;
      modelCalls: number;
      repaired: boolean;
      rejectedSubmissions: number;
    };

/** Options of `runTaskTurn`: `runTurn`'s, with a task turn (whose catalog has `submit_result`). */
export type RunTaskTurnOptions = Omit<RunTurnOptions, 'baseInstructions'> & { baseInstructions?: string };

/**
 * Runs one task turn to its submission. Never throws: an aborted signal, a model error or a dead
 * sidecar are a `failed` outcome with the loop's status (`aborted`, ...), and so is prose after the
 * repair instruction (`turnStatus: 'completed'`).
 *
 * With a `journal`, the turn and its repair are its first and second turns: a part that ended there
 * is read back (an accepted submission from its recorded details), an open one resumes.
 */
export async function runTaskTurn(options: RunTaskTurnOptions): Promise<TaskTurnOutcome> {
  let accepted: { result: unknown } | undefined;
  let rejectedSubmissions = 0;
  // Watch submit_result's results as they come back: the accepted value travels in the details.
  const watch = (result: CallResult) => {
    const details = result.details;
    if (!result.error && result.terminateTurn && isJSONObject(details) && details.accepted === true && 'result' in details) {
      accepted ??= { result: details.result };
    } else rejectedSubmissions++;
  };
  const turn: ToolTurn = {
    get tools() {
      return options.turn.tools;
    },
    get instructions() {
      return options.turn.instructions;
    },
    get failure() {
      return options.turn.failure;
    },
    get trace() {
      return options.turn.trace;
    },
    call(request: CallRequest, callOptions?: { signal?: AbortSignal }): CallHandle {
      const handle = options.turn.call(request, callOptions);
      if (request.name === SUBMIT_RESULT_TOOL && !request.namespace) void handle.result.then(watch);
      return handle;
    },
  };
  const maxModelCalls = options.maxModelCalls ?? 50;
  const base = { ...options, turn, baseInstructions: options.baseInstructions ?? TASK_BASE_INSTRUCTIONS };
  const journal = options.journal;
  /** The journal's `index`-th turn when it ended there; else the turn run (or resumed) now. */
  const part = async (index: number, run: () => Promise<TurnOutcome>) => {
    const ended = journal ? endedTurnAt(journal.records, index) : undefined;
    const outcome: Pick<TurnOutcome, 'status' | 'modelCalls' | 'error' | 'terminatedBy'> & { input?: ResponseItem[] } = ended ?? (await run());
    const by = outcome.terminatedBy;
    if (by?.name === SUBMIT_RESULT_TOOL && isJSONObject(by.details) && by.details.accepted === true && 'result' in by.details) accepted ??= { result: by.details.result };
    return outcome;
  };
  let outcome = await part(0, () => runTurn({ ...base, maxModelCalls }));
  let modelCalls = outcome.modelCalls;
  let repaired = false;
  const submitted = () =>
    // The handle's result settles before the loop records it, so `accepted` is set by now.
    accepted ? ({ status: 'submitted', result: accepted.result, modelCalls, repaired, rejectedSubmissions } as const) : undefined;
  if (outcome.status === 'terminated') return submitted() ?? failed('terminated', 'a tool ended the turn without an accepted submit_result');
  if (outcome.status === 'completed' && modelCalls < maxModelCalls) {
    repaired = true;
    const repair: ResponseItem = { type: 'message', role: 'user', content: [{ type: 'input_text', text: REPAIR_INSTRUCTION }] };
    // With a journal the loop starts the next turn after the journal's history itself.
    const input: ResponseItem[] = journal ? [repair] : [...(outcome.input ?? []), repair];
    const remaining = maxModelCalls - modelCalls;
    outcome = await part(1, () => runTurn({ ...base, prompt: input, maxModelCalls: remaining }));
    modelCalls += outcome.modelCalls;
    if (outcome.status === 'terminated') return submitted() ?? failed('terminated', 'a tool ended the turn without an accepted submit_result');
  }
  if (outcome.status === 'completed') {
    return failed('completed', repaired ? 'the model answered without submit_result twice (after the repair instruction)' : 'the model answered without submit_result');
  }
  return failed(outcome.status, outcome.error ?? outcome.status);

  function failed(turnStatus: TurnStatus, reason: string): TaskTurnOutcome {
    return { status: 'failed', turnStatus, reason, modelCalls, repaired, rejectedSubmissions };
  }
}
