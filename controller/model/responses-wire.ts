/**
 * The Responses API wire shapes a server speaks: output items, the response object, and the SSE
 * events of a streamed response with their real names and fields. Used by the embedded model and
 * by the scripted test servers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResponseItem } from './responses-model.js';

let counter = 0;
const nextId = (prefix: string) => `${prefix}_${Date.now().toString(36)}${(++counter).toString(36).padStart(4, '0')}`;

/** A completed assistant message item with one output_text part. */
export function messageItem(text: string, id = nextId('msg')): ResponseItem {
  return {
    type: 'message',
    id,
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}

/** A completed function_call item. */
export function functionCallItem(call: { callId: string; name: string; arguments: string; namespace?: string; id?: string }): ResponseItem {
  return {
    type: 'function_call',
    id: call.id ?? nextId('fc'),
    call_id: call.callId,
    name: call.name,
    ...(call.namespace ? { namespace: call.namespace } : {}),
    arguments: call.arguments,
    status: 'completed',
  };
}

/** A full `response` object. */
export function buildResponse(options: { model: string; output: ResponseItem[]; inputChars?: number; id?: string }): Record<string, unknown> {
  const outputChars = JSON.stringify(options.output).length;
  const inputTokens = Math.ceil((options.inputChars ?? 0) / 4);
  const outputTokens = Math.ceil(outputChars / 4);
  return {
    id: options.id ?? nextId('resp'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    model: options.model,
    output: options.output,
    parallel_tool_calls: true,
    store: false,
    usage: { input_tokens: inputTokens, output_tokens: outputTokens, total_tokens: inputTokens + outputTokens },
  };
}

function textChunks(text: string, size = 24): string[] {
  const parts: string[] = [];
  for (let index = 0; index < text.length; index += size) parts.push(text.slice(index, index + size));
  return parts.length > 0 ? parts : [''];
}

/**
 * The SSE events of a streamed response, in the order OpenAI sends them: response.created,
 * response.in_progress, per item output_item.added, its deltas and dones, output_item.done, and
 * the terminal event: response.completed, or response.incomplete / .failed / .cancelled when the
 * response's `status` says so. Each event carries `type` and `sequence_number`. Deltas carry
 * `deltaChars` characters each (default 24).
 */
export function responseSseEvents(response: Record<string, unknown>, options: { deltaChars?: number } = {}): Array<Record<string, unknown>> {
  const chunks = (text: string) => textChunks(text, options.deltaChars);
  const events: Array<Record<string, unknown>> = [];
  const push = (event: Record<string, unknown>) => events.push({ ...event, sequence_number: events.length });
  const output = (response.output as ResponseItem[]) ?? [];
  const pending = { ...response, status: 'in_progress', output: [], usage: null };
  push({ type: 'response.created', response: pending });
  push({ type: 'response.in_progress', response: pending });
  output.forEach((item, outputIndex) => {
    const itemId = item.id as string;
    if (item.type === 'message') {
      const parts = (item.content as Array<{ type: string; text: string }>) ?? [];
      push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } });
      parts.forEach((part, contentIndex) => {
        const base = { item_id: itemId, output_index: outputIndex, content_index: contentIndex };
        push({ type: 'response.content_part.added', ...base, part: { type: 'output_text', text: '', annotations: [] } });
        for (const delta of chunks(part.text)) push({ type: 'response.output_text.delta', ...base, delta, logprobs: [] });
        push({ type: 'response.output_text.done', ...base, text: part.text, logprobs: [] });
        push({ type: 'response.content_part.done', ...base, part });
      });
    } else if (item.type === 'function_call') {
      push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } });
      for (const delta of chunks(item.arguments as string)) {
        push({ type: 'response.function_call_arguments.delta', item_id: itemId, output_index: outputIndex, delta });
      }
      push({ type: 'response.function_call_arguments.done', item_id: itemId, output_index: outputIndex, arguments: item.arguments });
    } else {
      push({ type: 'response.output_item.added', output_index: outputIndex, item });
    }
    push({ type: 'response.output_item.done', output_index: outputIndex, item });
  });
  const status = response.status;
  const terminal = status === 'incomplete' || status === 'failed' || status === 'cancelled' ? `response.${status}` : 'response.completed';
  push({ type: terminal, response });
  return events;
}

/** Writes events as an SSE body (`event:` and `data:` lines) and ends the response. */
export function writeSse(res: ServerResponse, events: Array<Record<string, unknown>>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const event of events) res.write(`event: ${event.type as string}\ndata: ${JSON.stringify(event)}\n\n`);
  res.end();
}

/** Writes a JSON body. */
export function writeJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * Reads a request body as JSON, at most `maxBytes` (default 32 MiB).
 *
 * @throws Error when the body is too large or not JSON.
 */
export async function readJsonBody(req: IncomingMessage, maxBytes = 32 * 1024 * 1024): Promise<unknown> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new Error(`request body over ${maxBytes} bytes`);
    parts.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(parts).toString('utf8'));
}
