/**
 * Reads a streamed Responses API body (SSE) into the final response, parsing only the events the
 * loop needs. The openai SDK's own stream parses every event's JSON (each text and arguments
 * delta) and copies its byte buffer once per event; the loop only needs the finished items, so
 * this reader skips the deltas by their `event:` name and parses the terminal event
 * (`response.completed`, `.incomplete`, `.failed`, `.cancelled`), plus the items, only when the
 * terminal response carries no output.
 *
 * Linear in the size of an event: the chunks of an unfinished event are kept apart (never appended
 * to one growing string and searched again) and joined once, when a blank line ends it; a skipped
 * event's chunks are dropped as soon as its name is known.
 */
import { ToolRuntimeError } from '../../src/index.js';
import { readBodyChunks } from './read-body-chunks.js';
import { NATIVE_CALL_TYPES, type ModelResponse, type ResponseItem } from './responses-model.js';
import { toModelResponse, type RawResponse } from './to-model-response.js';

/** Events whose data the reader must look at; other `response.*` events are skipped unparsed. */
const NEEDED = new Set([
  'response.output_item.added',
  'response.output_item.done',
  'response.completed',
  'response.incomplete',
  'response.failed',
  'response.cancelled',
  'error',
]);
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed', 'response.cancelled']);
/** How much of an event's start is looked at for its `event:` line. */
const HEAD_CHARS = 256;

type StreamEvent = {
  type?: string;
  output_index?: number;
  item?: ResponseItem;
  code?: string;
  message?: string;
  response?: RawResponse;
};

/** The state of one stream: items (finished ones kept as text until needed) and the outcome. */
interface StreamState {
  done: Array<{ outputIndex: number | undefined; data: string; event?: StreamEvent }>;
  /** Items begun (`output_item.added`) by output index: a call cut off mid-arguments has no `done`. */
  added: Map<number, ResponseItem>;
  response: ModelResponse | undefined;
}

function parseData(data: string): StreamEvent {
  try {
    return JSON.parse(data) as StreamEvent;
  } catch (error) {
    throw new ToolRuntimeError('model_error', `the model stream sent an event that is not JSON: ${data.slice(0, 200)}`, { cause: error });
  }
}

/** The streamed items in output order; a call begun but never finished is kept as `incomplete`. */
function assembled(state: StreamState): ResponseItem[] {
  const items = state.done.map((entry, index) => {
    const event = entry.event ?? parseData(entry.data);
    return { outputIndex: event.output_index ?? entry.outputIndex ?? index, item: event.item };
  });
  const finished = new Set(items.map(({ outputIndex }) => outputIndex));
  for (const [outputIndex, item] of state.added) {
    if (!finished.has(outputIndex) && (item.type === 'function_call' || NATIVE_CALL_TYPES.has(item.type))) items.push({ outputIndex, item: { ...item, status: 'incomplete' } });
  }
  items.sort((a, b) => a.outputIndex - b.outputIndex);
  return items.flatMap(({ item }) => (item ? [item] : []));
}

const eventName = (line: string) => (line.charCodeAt(6) === 32 ? line.slice(7) : line.slice(6)).trim();
const skipped = (name: string | undefined) => name !== undefined && name.startsWith('response.') && !NEEDED.has(name);

/** Handles one SSE event block (its lines without the blank line). Returns true once the response ended. */
function handleBlock(block: string, state: StreamState): boolean {
  let name: string | undefined;
  let data: string | undefined;
  for (const line of block.split('\n')) {
    if (line.startsWith('data:')) {
      const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = data === undefined ? value : `${data}\n${value}`;
    } else if (line.startsWith('event:')) {
      name = eventName(line);
    }
  }
  if (data === undefined || data === '[DONE]') return false;
  // A `response.*` event name the loop does not need: a delta or a progress event, skipped unparsed.
  if (skipped(name)) return false;
  if (name === 'response.output_item.done') {
    state.done.push({ outputIndex: undefined, data });
    return false;
  }
  // No event name (some compatible servers send data lines only), or one the loop needs: parse it.
  const event = parseData(data);
  const type = event.type ?? name;
  if (type === 'response.output_item.done') {
    state.done.push({ outputIndex: event.output_index, data, event });
  } else if (type === 'response.output_item.added') {
    if (event.item && typeof event.output_index === 'number') state.added.set(event.output_index, event.item);
  } else if (type !== undefined && TERMINAL.has(type) && event.response) {
    const raw = event.response;
    // A stream's terminal event names the outcome even when its response object says less.
    const status = raw.status ?? type.slice('response.'.length);
    state.response = toModelResponse({ ...raw, status }, raw.output && raw.output.length > 0 ? raw.output : assembled(state));
    return true;
  } else if (type === 'error' || name === 'error') {
    const code = event.code ? `${event.code}: ` : '';
    throw new ToolRuntimeError('model_error', `the model stream sent an error: ${code}${event.message ?? 'no message'}`);
  }
  return false;
}

/** Splits decoded SSE text into event blocks, each joined once, and hands them to `onBlock`. */
function createBlockSplitter(onBlock: (block: string) => boolean) {
  let pieces: string[] = [];
  let head = '';
  let decided = false;
  let skipping = false;
  let endsWithNewline = false;
  let events = 0;
  let lastName = '';
  const startBlock = () => {
    pieces = [];
    head = '';
    decided = skipping = endsWithNewline = false;
  };
  const endBlock = (tail: string): boolean => {
    events++;
    if (skipping) {
      startBlock();
      return false;
    }
    const block = pieces.length === 0 ? tail : pieces.join('') + tail;
    if (!decided && block.startsWith('event:')) {
      const lineEnd = block.indexOf('\n');
      lastName = eventName(lineEnd === -1 ? block : block.slice(0, lineEnd));
    }
    startBlock();
    return onBlock(block);
  };
  /** Appends text with no blank line in it to the current block. */
  const append = (text: string) => {
    if (text.length === 0) return;
    endsWithNewline = text.charCodeAt(text.length - 1) === 10;
    if (!decided) {
      head += text.slice(0, HEAD_CHARS - head.length);
      const lineEnd = head.indexOf('\n');
      if (lineEnd !== -1 || head.length >= HEAD_CHARS) {
        decided = true;
        const first = lineEnd === -1 ? head : head.slice(0, lineEnd);
        if (first.startsWith('event:')) lastName = eventName(first);
        if (first.startsWith('event:') && skipped(lastName)) {
          skipping = true;
          pieces = [];
        }
      }
    }
    if (!skipping) pieces.push(text);
  };
  return {
    progress: () => `${events} event${events === 1 ? '' : 's'}${lastName ? `, the last ${lastName}` : ''}`,
    /** Takes the next text (CRLF already normalized); returns true once `onBlock` said stop. */
    push(text: string): boolean {
      let position = 0;
      // A blank line across the boundary: the block so far ends with a newline, the text starts with one.
      if (endsWithNewline && text.charCodeAt(0) === 10) {
        const block = skipping ? '' : pieces.join('');
        pieces = [block.slice(0, -1)];
        if (endBlock('')) return true;
        position = 1;
      }
      let end: number;
      while ((end = text.indexOf('\n\n', position)) !== -1) {
        if (endBlock(text.slice(position, end))) return true;
        position = end + 2;
      }
      append(position === 0 ? text : text.slice(position));
      return false;
    },
    /** The stream ended: handles a last block that had no blank line. */
    finish(): boolean {
      if (skipping || pieces.length === 0) return false;
      const block = pieces.join('');
      return block.trim() ? endBlock('') : false;
    },
  };
}

/** Options of `readResponseStream`. */
export interface ReadResponseStreamOptions {
  /** Longest wait between chunks, in ms (default 0: none). */
  idleTimeoutMs?: number;
  /** Aborts the read. */
  signal?: AbortSignal;
}

/**
 * Reads an SSE body of `POST /responses` with `stream: true` until its terminal event and returns
 * the response (its `output`, or the streamed items in output order when it has none), with
 * `status` and `reason` when it did not complete. Stops reading (and cancels the body) as soon as
 * the response ended.
 *
 * @throws ToolRuntimeError `model_error` when the stream sends an `error` event or an unparseable
 *   needed event, ends before a terminal event, stalls past `idleTimeoutMs`, or the connection
 *   breaks (the message says how far it had got); `aborted` when `signal` aborts.
 */
export async function readResponseStream(body: ReadableStream<Uint8Array> | null, options: ReadResponseStreamOptions = {}): Promise<ModelResponse> {
  if (!body) throw new ToolRuntimeError('model_error', 'the model answered a streamed request without a body');
  const state: StreamState = { done: [], added: new Map(), response: undefined };
  const splitter = createBlockSplitter((block) => handleBlock(block, state));
  const decoder = new TextDecoder();
  // A CR at a chunk's end may be the first half of a CRLF: held back until the next chunk.
  let heldCR = false;
  const take = (decoded: string, last: boolean): boolean => {
    let text = (heldCR ? '\r' : '') + decoded;
    heldCR = !last && text.endsWith('\r');
    if (heldCR) text = text.slice(0, -1);
    return splitter.push(text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text);
  };
  const chunks = readBodyChunks(body, {
    idleTimeoutMs: options.idleTimeoutMs ?? 0,
    signal: options.signal ?? new AbortController().signal,
    progress: splitter.progress,
  });
  for await (const chunk of chunks) {
    if (take(decoder.decode(chunk, { stream: true }), false)) return state.response as ModelResponse;
  }
  if (take(decoder.decode(), true) || splitter.finish()) return state.response as ModelResponse;
  throw new ToolRuntimeError('model_error', `the model stream ended without a terminal event (response.completed) after ${splitter.progress()}`);
}
