/**
 * Reads a streamed Responses API body (SSE) into the final response, parsing only the events the
 * loop needs. The openai SDK's own stream parses every event's JSON (each text and arguments
 * delta) and copies its byte buffer once per event; the loop only needs the finished items, so
 * this reader skips the deltas by their `event:` name and parses `response.completed` (plus the
 * `response.output_item.done` items, only when the completed response carries no output).
 */
import { ToolRuntimeError } from '../../src/index.js';
import type { ModelResponse, ModelUsage, ResponseItem } from './responses-model.js';

/** Events whose data the reader must look at; other `response.*` events are skipped unparsed. */
const NEEDED = new Set(['response.output_item.done', 'response.completed', 'response.failed', 'response.incomplete', 'error']);

type StreamEvent = {
  type?: string;
  output_index?: number;
  item?: ResponseItem;
  message?: string;
  response?: { id: string; output?: ResponseItem[]; usage?: ModelUsage; error?: { message?: string } };
};

/** The state of one stream: finished items (kept as text until needed) and the outcome. */
interface StreamState {
  items: Array<{ outputIndex: number | undefined; data: string; event?: StreamEvent }>;
  response: ModelResponse | undefined;
}

function parseData(data: string): StreamEvent {
  try {
    return JSON.parse(data) as StreamEvent;
  } catch (error) {
    throw new ToolRuntimeError('model_error', `the model stream sent an event that is not JSON: ${data.slice(0, 200)}`, { cause: error });
  }
}

function assembled(state: StreamState): ResponseItem[] {
  const items = state.items.map((entry, index) => {
    const event = entry.event ?? parseData(entry.data);
    return { outputIndex: event.output_index ?? entry.outputIndex ?? index, item: event.item };
  });
  items.sort((a, b) => a.outputIndex - b.outputIndex);
  return items.flatMap(({ item }) => (item ? [item] : []));
}

/** Handles one SSE event block (its lines without the blank line). Returns true once the response completed. */
function handleBlock(block: string, state: StreamState): boolean {
  let name: string | undefined;
  let data: string | undefined;
  for (const line of block.split('\n')) {
    if (line.startsWith('data:')) {
      const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = data === undefined ? value : `${data}\n${value}`;
    } else if (line.startsWith('event:')) {
      name = (line.charCodeAt(6) === 32 ? line.slice(7) : line.slice(6)).trim();
    }
  }
  if (data === undefined || data === '[DONE]') return false;
  // A `response.*` event name the loop does not need: a delta or a progress event, skipped unparsed.
  if (name !== undefined && name.startsWith('response.') && !NEEDED.has(name)) return false;
  if (name === 'response.output_item.done') {
    state.items.push({ outputIndex: undefined, data });
    return false;
  }
  // No event name (some compatible servers send data lines only), or one the loop needs: parse it.
  const event = parseData(data);
  const type = event.type ?? name;
  if (type === 'response.output_item.done') {
    state.items.push({ outputIndex: event.output_index, data, event });
    return false;
  }
  if (type === 'response.completed' && event.response) {
    const response = event.response;
    const output = response.output && response.output.length > 0 ? response.output : assembled(state);
    state.response = { id: response.id, output, ...(response.usage ? { usage: response.usage } : {}) };
    return true;
  }
  if (type === 'response.failed' || type === 'response.incomplete' || type === 'error' || name === 'error') {
    const message = event.response?.error?.message ?? event.message ?? type ?? 'error';
    throw new ToolRuntimeError('model_error', `the model response ended with ${type}: ${message}`);
  }
  return false;
}

/**
 * Reads an SSE body of `POST /responses` with `stream: true` until `response.completed` and returns
 * the response (its `output`, or the `output_item.done` items in output order when it has none).
 * Stops reading (and cancels the body) as soon as the response completed.
 *
 * @throws ToolRuntimeError `model_error` when the stream reports `response.failed`,
 *   `response.incomplete` or `error`, sends an unparseable needed event, or ends before
 *   `response.completed`. Aborting the request's signal makes the body's read reject (the caller
 *   maps that to `aborted`).
 */
export async function readResponseStream(body: ReadableStream<Uint8Array> | null): Promise<ModelResponse> {
  if (!body) throw new ToolRuntimeError('model_error', 'the model answered a streamed request without a body');
  const state: StreamState = { items: [], response: undefined };
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = '';
  // A CR at a chunk's end may be the first half of a CRLF: held back until the next chunk.
  let heldCR = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      let text: string = (heldCR ? '\r' : '') + (done ? decoder.decode() : decoder.decode(value, { stream: true }));
      heldCR = !done && text.endsWith('\r');
      if (heldCR) text = text.slice(0, -1);
      // The held-over text has no blank line: look for one from its last character on only.
      let scan = Math.max(0, buffer.length - 1);
      buffer += text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
      let start = 0;
      let end: number;
      while ((end = buffer.indexOf('\n\n', scan)) !== -1) {
        const block = buffer.slice(start, end);
        start = end + 2;
        scan = start;
        if (handleBlock(block, state)) return state.response as ModelResponse;
      }
      buffer = start === 0 ? buffer : buffer.slice(start);
      if (done) {
        if (buffer.trim() && handleBlock(buffer, state)) return state.response as ModelResponse;
        throw new ToolRuntimeError('model_error', 'the model stream ended without response.completed');
      }
    }
  } finally {
    // Done early (completed or failed): let the connection go back to the pool or close.
    void reader.cancel().catch(() => undefined);
  }
}
