import OpenAI from 'openai';
import { errorMessage, ToolRuntimeError } from '../../src/index.js';
import { readResponseStream } from './read-response-stream.js';
import type { ModelRequest, ModelResponse, ModelUsage, ResponseItem, ResponsesModel } from './responses-model.js';

/** Options of `createOpenAIResponsesModel`. */
export interface OpenAIResponsesModelOptions {
  /** The model name, e.g. `gpt-5.4`. */
  model: string;
  /** Default: `OPENAI_API_KEY` (the SDK's usual variable). */
  apiKey?: string;
  /** Default: `OPENAI_BASE_URL`, else `https://api.openai.com/v1`. */
  baseURL?: string;
  /** Stream the response (SSE) and assemble items from `response.output_item.done` (default true). */
  stream?: boolean;
  /** Retries on 408/409/429/5xx and connection errors, with the SDK's backoff (default 2). */
  maxRetries?: number;
  /** Per-request timeout in ms (default 10 minutes). */
  timeoutMs?: number;
  /** Ask for encrypted reasoning so reasoning items can be carried statelessly (OpenAI only). */
  includeEncryptedReasoning?: boolean;
  /** Extra body fields (e.g. `reasoning`), sent as given. */
  extraBody?: Record<string, unknown>;
}

/** Translates an SDK error into a ToolRuntimeError with a one-line message. */
export function describeModelError(error: unknown, model: string, baseURL: string): ToolRuntimeError {
  if (error instanceof OpenAI.APIUserAbortError) return new ToolRuntimeError('aborted', 'the model request was aborted', { cause: error });
  if (error instanceof OpenAI.APIConnectionError) {
    return new ToolRuntimeError('model_error', `could not reach the model endpoint at ${baseURL}: ${errorMessage(error.cause ?? error)}`, { cause: error });
  }
  if (error instanceof OpenAI.APIError) {
    const detail = (error.error as { message?: string } | undefined)?.message ?? error.message;
    if (error.status === 401) return new ToolRuntimeError('model_error', `the model endpoint rejected the API key (401) at ${baseURL}`, { cause: error });
    if (error.status === 404) return new ToolRuntimeError('model_error', `model ${model} not found at ${baseURL} (404): ${detail}`, { cause: error });
    if (error.status === 429) return new ToolRuntimeError('model_error', `the model endpoint is rate limiting (429) after retries: ${detail}`, { cause: error });
    return new ToolRuntimeError('model_error', `the model request failed (${error.status ?? 'no status'}): ${detail}`, { cause: error });
  }
  return new ToolRuntimeError('model_error', `the model request failed: ${errorMessage(error)}`, { cause: error });
}

/**
 * The real model: the `openai` package's `responses.create`, streaming or not, `store: false`,
 * input items carried statelessly. A streamed body is read by `readResponseStream` (finished
 * items only) rather than the SDK's event-by-event parser. Request bodies are built as plain objects (namespaces,
 * `tool_search`, `defer_loading` may be newer than the SDK's types) and cast at the boundary.
 */
export function createOpenAIResponsesModel(options: OpenAIResponsesModelOptions): ResponsesModel {
  const client = new OpenAI({
    apiKey: options.apiKey ?? process.env.OPENAI_API_KEY ?? '',
    ...(options.baseURL ? { baseURL: options.baseURL } : {}),
    maxRetries: options.maxRetries ?? 2,
    timeout: options.timeoutMs ?? 10 * 60_000,
  });
  const baseURL = client.baseURL;
  const stream = options.stream ?? true;
  return {
    description: `${options.model} at ${baseURL}`,
    async create(request: ModelRequest, { signal }): Promise<ModelResponse> {
      const body: Record<string, unknown> = {
        model: options.model,
        instructions: request.instructions,
        input: request.input,
        store: false,
        ...(request.tools.length > 0 ? { tools: request.tools, parallel_tool_calls: true } : {}),
        ...(options.includeEncryptedReasoning ? { include: ['reasoning.encrypted_content'] } : {}),
        ...options.extraBody,
        stream,
      };
      // The SDK adds an abort listener to the signal it is given and never removes it: give it a
      // per-request signal, so a turn's signal does not collect one listener per model call.
      const requestController = new AbortController();
      const onAbort = () => requestController.abort(signal.reason);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      const requestSignal = requestController.signal;
      try {
        if (!stream) {
          const response = (await client.responses.create(body as never, { signal: requestSignal })) as unknown as {
            id: string;
            output: ResponseItem[];
            usage?: ModelUsage;
          };
          return { id: response.id, output: response.output ?? [], ...(response.usage ? { usage: response.usage } : {}) };
        }
        // The SDK sends the request (auth, retries, status errors); the body is read by the lean
        // reader, which skips the deltas the loop does not use.
        const response = await client.responses.create(body as never, { signal: requestSignal }).asResponse();
        return await readResponseStream(response.body);
      } catch (error) {
        if (error instanceof ToolRuntimeError) throw error;
        if (signal.aborted) throw new ToolRuntimeError('aborted', 'the model request was aborted', { cause: error });
        throw describeModelError(error, options.model, baseURL);
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    },
  };
}
