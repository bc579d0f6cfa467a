/**
 * The loop's journal: what a turn records as it happens, so a turn whose runner died resumes from
 * it (docs/reliability.md). The loop owns the record types; a store (the control plane's turn
 * journals) keeps them.
 */
import type { FunctionCallItem, ModelResponse, ModelUsage, ResponseItem } from '../model/responses-model.js';
import { callsOfResponse, mergeNativePieces } from './native-calls.js';
import { NO_NATIVE_TOOLS } from './native-tools.js';
import type { TurnStatus } from './turn-events.js';

/** One thing that happened in a turn, in the order it happened. */
export type TurnRecord =
  /** A turn starts: the user's message (or the input items it starts from). */
  | { kind: 'input'; items: ResponseItem[] }
  /** A model call finished: its response. */
  | { kind: 'model_response'; id: string; output: ResponseItem[]; usage?: ModelUsage; status?: ModelResponse['status']; reason?: string }
  /**
   * A call is about to be sent to the sidecar (recorded before it is sent). `callIndex` is its
   * position among the response's function calls (call ids may repeat); `rerun` says whether it
   * may run again when its runner died with it in flight (read-only or declared idempotent).
   */
  | { kind: 'call_intent'; callIndex: number; callId: string; name: string; rerun: boolean }
  /** A call's result, as the model reads it (`output`), and what the loop needs of it. */
  | {
      kind: 'call_result';
      callIndex: number;
      callId: string;
      name: string;
      output: ResponseItem;
      label: string;
      terminateTurn: boolean;
      error?: { code: string; message: string };
      /** The result's details, kept only for a result that ends the turn (a task's accepted submission). */
      details?: unknown;
    }
  /** The turn ended. */
  | { kind: 'turn_end'; status: TurnStatus; finalText: string; modelCalls: number; error?: string };

/**
 * A turn's journal, as the loop writes it. `records` holds everything recorded so far (earlier
 * turns of a session included); `append` adds one record durably before it resolves.
 *
 * @throws (append) when the store refuses: the runner lost the turn to another, or the store is down.
 *   The loop then stops the turn (`journal_failed`) rather than run calls nobody records.
 */
export interface TurnJournal {
  readonly records: readonly TurnRecord[];
  append(record: TurnRecord): Promise<void>;
}

/** The output a call in flight gets when its runner died and it may have changed things. */
export const INTERRUPTED_OUTPUT = 'interrupted: this call may or may not have taken effect; check before repeating it';

/** Where the open turn starts: the index after the last `turn_end` (0 when none). */
export function openTurnStart(records: readonly TurnRecord[]): number {
  for (let index = records.length - 1; index >= 0; index--) if (records[index]!.kind === 'turn_end') return index + 1;
  return 0;
}

/** The last record when it ended a turn: the journal's turn is over, nothing to resume. */
export function endedTurn(records: readonly TurnRecord[]): Extract<TurnRecord, { kind: 'turn_end' }> | undefined {
  const last = records.at(-1);
  return last?.kind === 'turn_end' ? last : undefined;
}

/**
 * The calls of a response, in order, as the loop numbers them: each function call, and each native
 * call as its sidecar calls (one per shell command), whatever tools the turn offers.
 */
export function callsOf(output: readonly ResponseItem[]): FunctionCallItem[] {
  return callsOfResponse({ id: '', output: [...output] }, NO_NATIVE_TOOLS).map(({ call }) => call);
}

/** The state of the journal's last response when its calls did not all get results. */
export interface PendingResponse {
  response: ModelResponse;
  /** Results recorded, by call index. */
  results: Map<number, Extract<TurnRecord, { kind: 'call_result' }>>;
  /** Intents recorded (sent, maybe in flight), by call index. */
  intents: Map<number, Extract<TurnRecord, { kind: 'call_intent' }>>;
}

/**
 * Rebuilds the model's input from a journal: every turn's input, each response's output, then its
 * calls' outputs in call order (results are recorded as they finish, in any order). Returns the
 * input before the open turn's last response's outputs when that response's calls are not all
 * answered, with that response as `pending`.
 */
export function replayJournal(records: readonly TurnRecord[]): { input: ResponseItem[]; pending?: PendingResponse; modelCalls: number } {
  const input: ResponseItem[] = [];
  let open: PendingResponse | undefined;
  let modelCalls = 0;
  const flush = () => {
    if (!open) return;
    const indexes = [...open.results.keys()].sort((a, b) => a - b);
    // A shell call's pieces (one per command) become its one output item, as the loop records them.
    input.push(...mergeNativePieces(indexes.map((index) => open!.results.get(index)!.output)));
    open = undefined;
  };
  for (const record of records) {
    switch (record.kind) {
      case 'input':
        flush();
        input.push(...record.items);
        break;
      case 'model_response':
        flush();
        modelCalls++;
        input.push(...record.output);
        open = {
          response: { id: record.id, output: record.output, ...(record.usage ? { usage: record.usage } : {}), ...(record.status ? { status: record.status } : {}), ...(record.reason !== undefined ? { reason: record.reason } : {}) },
          results: new Map(),
          intents: new Map(),
        };
        break;
      case 'call_intent':
        open?.intents.set(record.callIndex, record);
        break;
      case 'call_result':
        open?.results.set(record.callIndex, record);
        break;
      case 'turn_end':
        flush();
        modelCalls = 0;
        break;
    }
  }
  if (open && open.results.size < callsOf(open.response.output).length) return { input, pending: open, modelCalls };
  flush();
  return { input, modelCalls };
}

/** How a turn of the journal ended, as `runTurn` would have said it. */
export interface EndedTurn {
  status: TurnStatus;
  finalText: string;
  error?: string;
  modelCalls: number;
  terminatedBy?: { name: string; details: unknown };
}

/** The `turnIndex`-th turn of the journal that ended (0 the first), or undefined when it has not. */
export function endedTurnAt(records: readonly TurnRecord[], turnIndex: number): EndedTurn | undefined {
  let seen = 0;
  let terminatedBy: EndedTurn['terminatedBy'];
  for (const record of records) {
    if (record.kind === 'call_result' && record.terminateTurn && !record.error) terminatedBy = { name: record.name, details: record.details };
    if (record.kind !== 'turn_end') continue;
    if (seen++ === turnIndex) {
      return {
        status: record.status,
        finalText: record.finalText,
        modelCalls: record.modelCalls,
        ...(record.error ? { error: record.error } : {}),
        ...(record.status === 'terminated' && terminatedBy ? { terminatedBy } : {}),
      };
    }
    terminatedBy = undefined;
  }
  return undefined;
}
