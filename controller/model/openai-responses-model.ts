import OpenAI from 'openai';
import { errorMessage, ToolRuntimeError } from '../../src/index.js';
import { readResponseJson } from './read-response-json.js';
import { readResponseStream } from './read-response-stream.js';
import type { ModelRequest, ModelResponse, ResponsesModel } from './responses-model.js';
import { retryDecision, sleepWithSignal } from './retry-policy.js';

/** Default longest `retry-after` honoured: a server asking for more ends the turn with its reason. */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;
/** Default longest silence between body chunks: long enough for a reasoning model's pauses. */
export const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 300_000;

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
  /**
   * Retries on 408/409/429/5xx and connection errors (default 2), after the server's `retry-after`
   * or else the SDK's backoff. The wait ends at once when the request's signal aborts.
   */
  maxRetries?: number;
  /** The longest `retry-after` honoured, in ms (default 60 s); a longer one ends the request with it as the reason. */
  maxRetryAfterMs?: number;
  /** Time to the response's headers, in ms (default 10 minutes). */
  timeoutMs?: number;
  /** Longest silence between body chunks once the headers came, in ms (default 5 minutes; 0: none). */
  streamIdleTimeoutMs?: number;
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
    if (error.status === 429) return new ToolRuntimeError('model_error', `the model endpoint is rate limiting (429): ${detail}`, { cause: error });
    return new ToolRuntimeError('model_error', `the model request failed (${error.status ?? 'no status'}): ${detail}`, { cause: error });
  }
  return new ToolRuntimeError('model_error', `the model request failed: ${errorMessage(error)}`, { cause: error });
}

/**
 * The real model: the `openai` package's `responses.create`, streaming or not, `store: false`,
 * input items carried statelessly. The SDK sends each attempt (auth, status errors); the body is
 * read here with an idle timeout, a streamed one by `readResponseStream` (finished items only),
 * and retries are this model's own, so their waits abort with the turn and a long `retry-after`
 * is refused rather than slept through. Request bodies are built as plain objects (namespaces,
 * `tool_search`, `defer_loading` may be newer than the SDK's types) and cast at the boundary.
 * A response that did not complete comes back with its `status` and `reason`, for the loop to
 * decide.
 */
export function createOpenAIResponsesModel(options: OpenAIResponsesModelOptions): ResponsesModel {
  const client = new OpenAI({
    apiKey: options.apiKey ?? process.env.OPENAI_API_KEY ?? '',
    ...(options.baseURL ? { baseURL: options.baseURL } : {}),
    maxRetries: 0,
    timeout: options.timeoutMs ?? 10 * 60_000,
  });
  const baseURL = client.baseURL;
  const stream = options.stream ?? true;
  const policy = { maxRetries: options.maxRetries ?? 2, maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS };
  const idleTimeoutMs = options.streamIdleTimeoutMs ?? DEFAULT_STREAM_IDLE_TIMEOUT_MS;
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
        for (let attempt = 0; ; attempt++) {
          let response: Response;
          try {
            response = await client.responses.create(body as never, { signal: requestSignal }).asResponse();
          } catch (error) {
            if (signal.aborted) throw new ToolRuntimeError('aborted', 'the model request was aborted', { cause: error });
            const decision = retryDecision(error, attempt, policy);
            if (!decision.retry) {
              const described = describeModelError(error, options.model, baseURL);
              if (!decision.reason) throw described;
              throw new ToolRuntimeError('model_error', `${described.message}; ${decision.reason}`, { cause: error });
            }
            await sleepWithSignal(decision.delayMs, signal);
            continue;
          }
          // A body that breaks off or stalls is not retried: the turn ends with how far it had got.
          const read = { idleTimeoutMs, signal: requestSignal };
          return stream ? await readResponseStream(response.body, read) : await readResponseJson(response.body, read);
        }
      } catch (error) {
        if (signal.aborted) throw new ToolRuntimeError('aborted', 'the model request was aborted', { cause: error });
        if (error instanceof ToolRuntimeError) throw error;
        throw describeModelError(error, options.model, baseURL);
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    },
  };
}
