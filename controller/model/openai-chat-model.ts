import OpenAI from 'openai';
import { ToolRuntimeError } from '../../src/index.js';
import { ChatStreamAssembler, fromChatAnswer, toChatMessages, toChatTools, type ChatAnswer } from './chat-wire.js';
import { DEFAULT_MAX_RETRY_AFTER_MS, DEFAULT_STREAM_IDLE_TIMEOUT_MS, describeModelError, type OpenAIResponsesModelOptions } from './openai-responses-model.js';
import type { ModelRequest, ModelResponse, ResponsesModel } from './responses-model.js';
import { retryDecision, sleepWithSignal } from './retry-policy.js';

/** Options of `createOpenAIChatModel`: those of the Responses model but encrypted reasoning (Chat Completions has none). */
export type OpenAIChatModelOptions = Omit<OpenAIResponsesModelOptions, 'includeEncryptedReasoning'>;

/**
 * A model behind the Chat Completions API (`/chat/completions`), for servers that speak only that
 * (llama.cpp's server, LM Studio, many local servers), through the `openai` package. The loop sees
 * the same `ResponsesModel`: each request's items and tools are translated (chat-wire.ts), and the
 * answer comes back as Responses output items, so the tools, the sidecar's argument repair and
 * validation, approvals and the turn's events are those of the Responses path. Streaming (SSE
 * chunks assembled into text and tool calls), retries on 408/409/429/5xx with `retry-after`, and the
 * idle timeout between chunks behave as the Responses model's do. Namespaced tools are sent
 * flattened (`namespace__name`) and hosted tool search is not available: the CLI uses client-side
 * search with this API.
 */
export function createOpenAIChatModel(options: OpenAIChatModelOptions): ResponsesModel {
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
    description: `${options.model} at ${baseURL} (Chat Completions)`,
    async create(request: ModelRequest, { signal }): Promise<ModelResponse> {
      const tools = toChatTools(request.tools);
      const body: Record<string, unknown> = {
        model: options.model,
        messages: toChatMessages(request.instructions, request.input),
        ...(tools.length > 0 ? { tools, parallel_tool_calls: true } : {}),
        ...options.extraBody,
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {}),
      };
      // A per-request signal (the SDK keeps a listener on the one it is given), aborted by the
      // turn's signal or by the idle timer.
      const requestController = new AbortController();
      const onAbort = () => requestController.abort(signal.reason);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      let idle = false;
      try {
        for (let attempt = 0; ; attempt++) {
          let started: unknown;
          try {
            started = await client.chat.completions.create(body as never, { signal: requestController.signal });
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
          if (!stream) return fromChatAnswer(completionAnswer(started as ChatCompletionJson));
          // A body that breaks off or stalls is not retried: the turn ends with how far it had got.
          const assembler = new ChatStreamAssembler();
          let timer: NodeJS.Timeout | undefined;
          const arm = () => {
            if (idleTimeoutMs <= 0) return;
            clearTimeout(timer);
            timer = setTimeout(() => {
              idle = true;
              requestController.abort(new Error('idle'));
            }, idleTimeoutMs);
          };
          arm();
          try {
            for await (const chunk of started as AsyncIterable<Parameters<ChatStreamAssembler['add']>[0]>) {
              arm();
              assembler.add(chunk);
            }
          } finally {
            clearTimeout(timer);
          }
          return fromChatAnswer(assembler.answer());
        }
      } catch (error) {
        if (signal.aborted) throw new ToolRuntimeError('aborted', 'the model request was aborted', { cause: error });
        if (idle) throw new ToolRuntimeError('model_error', `the model server at ${baseURL} sent nothing for ${idleTimeoutMs} ms (--stream-idle-timeout-ms)`, { cause: error });
        if (error instanceof ToolRuntimeError) throw error;
        throw describeModelError(error, options.model, baseURL);
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    },
  };
}

/** A non-streamed Chat Completions body, as far as it is read. */
interface ChatCompletionJson {
  id?: string;
  choices?: Array<{ message?: { content?: string | null; tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: string } }> }; finish_reason?: string | null }>;
  usage?: ChatAnswer['usage'];
}

function completionAnswer(json: ChatCompletionJson): ChatAnswer {
  const choice = json.choices?.[0];
  if (!choice) throw new ToolRuntimeError('model_error', 'the model server answered with no choices');
  const id = json.id || 'chatcmpl';
  return {
    id,
    content: choice.message?.content ?? '',
    toolCalls: (choice.message?.tool_calls ?? []).map((call, index) => ({
      id: call.id || `call_${id}_${index}`,
      type: 'function' as const,
      function: { name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' },
    })),
    finishReason: choice.finish_reason,
    usage: json.usage,
  };
}
