/**
 * The model's native calls as sidecar calls, and their results as the output items the Responses
 * API defines: an `apply_patch_call` becomes one call of the sidecar's apply_patch tool with the
 * operation as V4A patch text, answered by an `apply_patch_call_output`; a `shell_call` becomes one
 * call of the sidecar's shell tool per command (run in order: the tool is sequential), answered by
 * one `shell_call_output` with stdout, stderr and the outcome of each.
 */
import { constants } from 'node:os';
import { isJSONObject, truncateMiddle } from '../../src/index.js';
import { NATIVE_CALL_TYPES, type FunctionCallItem, type ModelResponse, type ResponseItem } from '../model/responses-model.js';
import { errorResult, type CallResult } from '../sidecar-client/sidecar-types.js';
import { toFunctionOutput } from './to-function-output.js';
import type { NativeToolPlan } from './native-tools.js';

/** One call the loop dispatches, and the output item it belongs to. */
export interface LoopCall {
  /** What goes to the sidecar (a native call as a call of its sidecar tool). */
  call: FunctionCallItem;
  /** Set for a native call: its item, and which of its commands this is (shell). */
  native?: { item: ResponseItem; kind: 'apply_patch' | 'shell'; index: number };
  /** Set when the native call cannot run at all (an operation or tool that is not there). */
  refused?: CallResult;
}

/** stdout and stderr of one shell command, as its `command.output` events streamed them. */
export interface CommandStreams {
  stdout: string;
  stderr: string;
  /** True once the sidecar's live-output budget ran out (its result still keeps head and tail). */
  budgetSpent: boolean;
}

/** The longest stdout or stderr kept per command when the call names no `max_output_length`. */
const DEFAULT_STREAM_CHARS = 100_000;
const BUDGET_MARKER = '[… live output stops here;';

/**
 * The V4A patch text for one `apply_patch_call` operation, in its `*** Begin Patch` envelope: the
 * form the sidecar's apply_patch tool takes. A `create_file` diff is the new file's lines, each
 * prefixed `+` (a diff that is not is prefixed here); an `update_file` diff is the operation's hunks.
 *
 * @throws Error for an operation that is not create_file, update_file or delete_file, or has no path.
 */
export function patchTextOf(operation: unknown): string {
  if (!isJSONObject(operation) || typeof operation.path !== 'string' || operation.path === '') {
    throw new Error('the apply_patch_call has no operation with a path');
  }
  const diff = typeof operation.diff === 'string' ? operation.diff.replace(/\n$/, '') : '';
  switch (operation.type) {
    case 'create_file': {
      const lines = diff === '' ? [] : diff.split('\n');
      const body = lines.every((line) => line.startsWith('+')) ? lines : lines.map((line) => `+${line}`);
      return ['*** Begin Patch', `*** Add File: ${operation.path}`, ...body, '*** End Patch'].join('\n');
    }
    case 'update_file':
      return ['*** Begin Patch', `*** Update File: ${operation.path}`, ...(diff === '' ? [] : [diff]), '*** End Patch'].join('\n');
    case 'delete_file':
      return ['*** Begin Patch', `*** Delete File: ${operation.path}`, '*** End Patch'].join('\n');
    default:
      throw new Error(`unknown apply_patch operation ${JSON.stringify(operation.type)} (expected create_file, update_file or delete_file)`);
  }
}

/** A native item the provider cut off: incomplete, or still in progress in an incomplete response. */
function cutOff(item: ResponseItem, response: ModelResponse): boolean {
  return item.status === 'incomplete' || (response.status === 'incomplete' && item.status === 'in_progress');
}

/**
 * The calls of one response, in output order: each `function_call` as it is, each native call as
 * calls of its sidecar tool. A native call whose tool this turn does not have, or whose operation
 * is malformed, is `refused` (answered with an error output, never run).
 */
export function callsOfResponse(response: ModelResponse, plan: NativeToolPlan): LoopCall[] {
  const calls: LoopCall[] = [];
  for (const item of response.output) {
    if (item.type === 'function_call' && typeof item.call_id === 'string' && typeof item.name === 'string') {
      calls.push({ call: item as FunctionCallItem });
      continue;
    }
    if (!NATIVE_CALL_TYPES.has(item.type) || typeof item.call_id !== 'string') continue;
    const callId = item.call_id;
    const status = cutOff(item, response) ? 'incomplete' : 'completed';
    if (item.type === 'apply_patch_call') {
      const tool = plan.applyPatch;
      const synthetic = (args: string): FunctionCallItem => ({ type: 'function_call', call_id: callId, name: tool?.name ?? 'apply_patch', arguments: args, status });
      if (!tool) {
        calls.push({ call: synthetic('{}'), native: { item, kind: 'apply_patch', index: 0 }, refused: refusal(callId, 'apply_patch is not offered in this turn: use the tools you were given') });
        continue;
      }
      try {
        calls.push({ call: synthetic(JSON.stringify({ patch: patchTextOf(item.operation) })), native: { item, kind: 'apply_patch', index: 0 } });
      } catch (error) {
        calls.push({ call: synthetic('{}'), native: { item, kind: 'apply_patch', index: 0 }, refused: refusal(callId, (error as Error).message) });
      }
      continue;
    }
    const tool = plan.shell;
    const action = isJSONObject(item.action) ? item.action : {};
    const commands = Array.isArray(action.commands) ? action.commands.filter((command): command is string => typeof command === 'string') : [];
    const timeout = typeof action.timeout_ms === 'number' && action.timeout_ms >= 1 ? Math.min(Math.floor(action.timeout_ms), 60 * 60_000) : undefined;
    const base = { type: 'function_call' as const, name: tool?.name ?? 'shell', status };
    if (commands.length === 0) {
      calls.push({ call: { ...base, call_id: callId, arguments: '{}' }, native: { item, kind: 'shell', index: 0 }, refused: refusal(callId, 'the shell_call has no commands') });
      continue;
    }
    // One sidecar call per command (so a journal's call indexes never depend on the tools offered);
    // the ids stay unique within the turn.
    commands.forEach((command, index) => {
      const id = commands.length === 1 ? callId : `${callId}#${index + 1}`;
      const args = JSON.stringify({ command, ...(timeout ? { timeout_ms: timeout } : {}) });
      const refused = tool ? undefined : refusal(id, 'shell is not offered in this turn: use the tools you were given');
      calls.push({ call: { ...base, call_id: id, arguments: args }, native: { item, kind: 'shell', index }, ...(refused ? { refused } : {}) });
    });
  }
  return calls;
}

function refusal(callId: string, message: string): CallResult {
  return { ...errorResult(callId, 'invalid_arguments', message), completedLabel: `Refused: ${message}` };
}

/** Collects the `command.output` events of shell commands, by call id, bounded. */
export function createStreamCollector(maxChars = 1_000_000): {
  add(callId: string, payload: unknown): void;
  get(callId: string): CommandStreams | undefined;
} {
  const byCall = new Map<string, CommandStreams>();
  return {
    add(callId, payload) {
      if (!isJSONObject(payload) || typeof payload.text !== 'string') return;
      const streams = byCall.get(callId) ?? { stdout: '', stderr: '', budgetSpent: false };
      byCall.set(callId, streams);
      const key = payload.stream === 'stderr' ? 'stderr' : 'stdout';
      let text = payload.text;
      const marker = text.indexOf(BUDGET_MARKER);
      if (marker >= 0) {
        streams.budgetSpent = true;
        text = text.slice(0, marker).replace(/\n$/, '');
      }
      if (streams[key].length < maxChars) streams[key] += text.slice(0, maxChars - streams[key].length);
    },
    get: (callId) => byCall.get(callId),
  };
}

const cut = (text: string, max: number) => (text.length > max ? truncateMiddle(text, max).text : text);

/** The text of a result, without run_command's first line (its status line). */
function resultBody(result: CallResult): string {
  const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  const body = text.slice(text.indexOf('\n') + 1);
  return body === '(no output)' ? '' : body;
}

/** One command's entry of a `shell_call_output`. */
function shellEntry(result: CallResult, streams: CommandStreams | undefined, max: number): Record<string, unknown> {
  if (result.error) {
    // Not run, or failed in the runtime (denied, sandbox unavailable, aborted): no exit code of its own.
    return { stdout: '', stderr: cut(`tools-runtime: ${result.error.message}`, max), outcome: { type: 'exit', exit_code: 126 } };
  }
  const details = isJSONObject(result.details) ? result.details : {};
  // Past the live budget, the streams lack the tail: the result's text keeps head and tail.
  const stdout = !streams || streams.budgetSpent ? resultBody(result) : streams.stdout;
  const stderr = streams?.stderr ?? '';
  const signal = typeof details.signal === 'string' ? (constants.signals as Record<string, number>)[details.signal] : undefined;
  const exitCode = typeof details.exitCode === 'number' ? details.exitCode : signal !== undefined ? 128 + signal : 1;
  const outcome = details.timedOut === true ? { type: 'timeout' } : { type: 'exit', exit_code: exitCode };
  return { stdout: cut(stdout, max), stderr: cut(stderr, max), outcome };
}

/**
 * The output piece of one call, as the loop records it (and journals it): a `function_call_output`
 * for a function call, the `apply_patch_call_output` for a patch (`failed` with the reason when it
 * did not apply), and for each command of a shell call a `shell_call_output` holding that command's
 * one entry; `mergeNativePieces` joins a shell call's pieces into its one output item.
 */
export function outputPieceOf(loopCall: LoopCall, result: CallResult, streams?: (callId: string) => CommandStreams | undefined): ResponseItem {
  const native = loopCall.native;
  if (!native) return { type: 'function_call_output', call_id: loopCall.call.call_id, output: toFunctionOutput(result.content) };
  if (native.kind === 'apply_patch') {
    const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
    return { type: 'apply_patch_call_output', call_id: native.item.call_id, status: result.error ? 'failed' : 'completed', output: text };
  }
  const action = isJSONObject(native.item.action) ? native.item.action : {};
  const max = typeof action.max_output_length === 'number' && action.max_output_length > 0 ? action.max_output_length : DEFAULT_STREAM_CHARS;
  return {
    type: 'shell_call_output',
    call_id: native.item.call_id,
    max_output_length: typeof action.max_output_length === 'number' ? action.max_output_length : null,
    output: [shellEntry(result, streams?.(loopCall.call.call_id), max)],
    status: 'completed',
  };
}

/**
 * The output items the model reads, from the pieces of one response's calls in call order: the
 * pieces of one shell call (adjacent, with its call id) become one `shell_call_output` with an entry
 * per command; everything else is as it is.
 */
export function mergeNativePieces(pieces: readonly ResponseItem[]): ResponseItem[] {
  const items: ResponseItem[] = [];
  for (const piece of pieces) {
    const last = items.at(-1);
    if (piece.type === 'shell_call_output' && last?.type === 'shell_call_output' && last.call_id === piece.call_id && Array.isArray(last.output) && Array.isArray(piece.output)) {
      items[items.length - 1] = { ...last, output: [...last.output, ...piece.output] };
    } else items.push(piece);
  }
  return items;
}

/**
 * The output items of one response's calls, one per call item, in the items' order (see
 * `outputPieceOf` and `mergeNativePieces`). `results` holds one result per call, in the same order.
 */
export function outputItemsOf(calls: readonly LoopCall[], results: readonly CallResult[], streams?: (callId: string) => CommandStreams | undefined): ResponseItem[] {
  return mergeNativePieces(calls.map((call, index) => outputPieceOf(call, results[index] as CallResult, streams)));
}
