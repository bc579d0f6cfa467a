/**
 * The Responses API's items and tools as Chat Completions messages and tools, and a Chat Completions
 * answer back as Responses output items: what lets the loop, which speaks Responses, drive a server
 * that speaks only Chat Completions (llama.cpp's server, LM Studio, vLLM's chat route...).
 */
import type { ModelResponse, ModelUsage, ProviderTool, ResponseItem } from './responses-model.js';

/** A Chat Completions message, as plain JSON. */
export type ChatMessage = { role: string; content?: string | null; tool_calls?: ChatToolCall[]; tool_call_id?: string; [key: string]: unknown };

/** One tool call of an assistant message. */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
    .filter((text) => text !== '')
    .join('\n');
}

/**
 * The messages for `instructions` and the turn's `input` items: the instructions as the system
 * message; user, developer and assistant messages by their text; consecutive `function_call` items
 * as one assistant message's `tool_calls` (joined to the assistant text just before them); each
 * `function_call_output` as a `tool` message. Reasoning items have no Chat Completions form and are
 * left out. A namespaced call is named `namespace__name`, as its tool is offered.
 */
export function toChatMessages(instructions: string, input: readonly ResponseItem[]): ChatMessage[] {
  const messages: ChatMessage[] = instructions ? [{ role: 'system', content: instructions }] : [];
  for (const item of input) {
    if (item.type === 'message') {
      const role = item.role === 'developer' ? 'system' : String(item.role ?? 'user');
      messages.push({ role, content: partsText(item.content) });
    } else if (item.type === 'function_call') {
      const call: ChatToolCall = {
        id: String(item.call_id),
        type: 'function',
        function: { name: item.namespace ? `${String(item.namespace)}__${String(item.name)}` : String(item.name), arguments: String(item.arguments ?? '') },
      };
      const last = messages.at(-1);
      if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: String(item.call_id), content: partsText(item.output) });
    }
  }
  return messages;
}

/**
 * The function tools of a request as Chat Completions tools (a namespace's members flattened to
 * `namespace__name`). Hosted tool search and deferred tools have no Chat Completions form: the
 * CLI sends client-side tool search with this API, where both are absent.
 */
export function toChatTools(tools: readonly ProviderTool[]): Array<{ type: 'function'; function: Record<string, unknown> }> {
  const result: Array<{ type: 'function'; function: Record<string, unknown> }> = [];
  const add = (tool: ProviderTool, prefix: string) => {
    if (tool.type !== 'function' || tool.defer_loading === true) return;
    result.push({
      type: 'function',
      function: {
        name: `${prefix}${String(tool.name)}`,
        ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
        parameters: tool.parameters ?? { type: 'object', properties: {} },
        ...(tool.strict === true ? { strict: true } : {}),
      },
    });
  };
  for (const tool of tools) {
    if (tool.type === 'namespace' && Array.isArray(tool.tools)) for (const member of tool.tools as ProviderTool[]) add(member, `${String(tool.name)}__`);
    else add(tool, '');
  }
  return result;
}

/** What one Chat Completions answer came to, however it arrived (JSON or assembled from chunks). */
export interface ChatAnswer {
  id: string;
  content: string;
  toolCalls: ChatToolCall[];
  finishReason?: string | null;
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
}

/**
 * The answer as a Responses `ModelResponse`: the text as one assistant message, each tool call as a
 * `function_call` item; `finish_reason: "length"` (or `content_filter`) is an incomplete response
 * with that reason, as the Responses API reports a cut-off output.
 */
export function fromChatAnswer(answer: ChatAnswer): ModelResponse {
  const output: ResponseItem[] = [];
  if (answer.content !== '') {
    output.push({ type: 'message', id: `msg_${answer.id}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: answer.content, annotations: [] }] });
  }
  for (const call of answer.toolCalls) {
    output.push({ type: 'function_call', id: `fc_${call.id}`, call_id: call.id, name: call.function.name, arguments: call.function.arguments, status: 'completed' });
  }
  const usage: ModelUsage | undefined = answer.usage
    ? { input_tokens: answer.usage.prompt_tokens ?? 0, output_tokens: answer.usage.completion_tokens ?? 0, total_tokens: answer.usage.total_tokens ?? 0 }
    : undefined;
  const cut = answer.finishReason === 'length' || answer.finishReason === 'content_filter';
  return {
    id: answer.id,
    output,
    ...(usage ? { usage } : {}),
    ...(cut ? { status: 'incomplete' as const, reason: answer.finishReason === 'length' ? 'max_output_tokens (finish_reason "length")' : 'content_filter' } : {}),
  };
}

/** Assembles streamed chunks (`choices[0].delta`) into one answer: text concatenated, tool calls by index. */
export class ChatStreamAssembler {
  #id = '';
  #content = '';
  readonly #calls: ChatToolCall[] = [];
  #finishReason: string | null | undefined;
  #usage: ChatAnswer['usage'];

  /** Takes one chunk, as the SDK's stream yields it. */
  add(chunk: { id?: string; choices?: Array<{ delta?: { content?: string | null; tool_calls?: Array<{ index: number; id?: string; function?: { name?: string; arguments?: string } }> }; finish_reason?: string | null }>; usage?: ChatAnswer['usage'] }): void {
    if (chunk.id) this.#id = chunk.id;
    if (chunk.usage) this.#usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return;
    if (choice.delta?.content) this.#content += choice.delta.content;
    for (const delta of choice.delta?.tool_calls ?? []) {
      const call = (this.#calls[delta.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (delta.id) call.id = delta.id;
      if (delta.function?.name) call.function.name += delta.function.name;
      if (delta.function?.arguments) call.function.arguments += delta.function.arguments;
    }
    if (choice.finish_reason) this.#finishReason = choice.finish_reason;
  }

  /** The answer so far (a call without an id gets one from its position). */
  answer(): ChatAnswer {
    const toolCalls = this.#calls.filter(Boolean).map((call, index) => ({ ...call, id: call.id || `call_${this.#id || 'chat'}_${index}` }));
    return { id: this.#id || 'chatcmpl', content: this.#content, toolCalls, finishReason: this.#finishReason, usage: this.#usage };
  }
}
