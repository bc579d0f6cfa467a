/** Reads a non-streamed Responses API body (one JSON response object) with an idle timeout. */
import { ToolRuntimeError } from '../../src/index.js';
import { readBodyChunks } from './read-body-chunks.js';
import type { ModelResponse } from './responses-model.js';
import { toModelResponse, type RawResponse } from './to-model-response.js';

/**
 * Reads `body` to its end and returns the response, with `status` and `reason` when it did not
 * complete (the same reading as the streamed path).
 *
 * @throws ToolRuntimeError `model_error` when the body is not a JSON object, stalls past
 *   `idleTimeoutMs` or breaks off mid-body; `aborted` when `signal` aborts.
 */
export async function readResponseJson(
  body: ReadableStream<Uint8Array> | null,
  options: { idleTimeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ModelResponse> {
  if (!body) throw new ToolRuntimeError('model_error', 'the model answered without a body');
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const read = readBodyChunks(body, { idleTimeoutMs: options.idleTimeoutMs ?? 0, signal: options.signal ?? new AbortController().signal });
  for await (const chunk of read) {
    chunks.push(chunk);
    bytes += chunk.byteLength;
  }
  const text = Buffer.concat(chunks, bytes).toString('utf8');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ToolRuntimeError('model_error', `the model server sent a body that is not JSON (${bytes} bytes): ${text.slice(0, 200)}`, { cause: error });
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ToolRuntimeError('model_error', `the model server sent JSON that is not a response object: ${text.slice(0, 200)}`);
  }
  return toModelResponse(raw as RawResponse);
}
