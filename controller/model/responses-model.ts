/**
 * The model as the loop sees it: one stateless Responses API call. Injected, so tests can script
 * it; `createOpenAIResponsesModel` is the real one.
 */

/** An input or output item of the Responses API, kept as the provider's plain JSON. */
export type ResponseItem = { type: string; [key: string]: unknown };

/** A `function_call` output item. */
export interface FunctionCallItem extends ResponseItem {
  type: 'function_call';
  call_id: string;
  name: string;
  /** The namespace of a namespaced tool, as the provider returns it. */
  namespace?: string;
  arguments: string;
}

/** A provider tool definition (function, namespace, tool_search), as plain JSON. */
export type ProviderTool = { type: string; [key: string]: unknown };

/** One model request. */
export interface ModelRequest {
  instructions: string;
  /**
   * The turn's items so far: the loop's own array, passed without a copy. The loop appends to it
   * once `create` has settled, so a model that keeps the request (a recorder) copies it.
   */
  input: ResponseItem[];
  tools: ProviderTool[];
}

/** Token usage, as the provider reports it. */
export interface ModelUsage {
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
  [key: string]: unknown;
}

/** How a response ended when it did not complete. */
export type ModelResponseStatus = 'incomplete' | 'failed' | 'cancelled';

/** One model response. */
export interface ModelResponse {
  id: string;
  output: ResponseItem[];
  usage?: ModelUsage;
  /**
   * Absent when the response completed. `incomplete`: the output was cut off (an item whose own
   * `status` is `incomplete` was cut off with it); `failed` / `cancelled`: the provider gave up.
   */
  status?: ModelResponseStatus;
  /** Why it did not complete: `incomplete_details.reason` (e.g. `max_output_tokens`) or the error. */
  reason?: string;
}

/** A Responses API model. */
export interface ResponsesModel {
  /** A label for progress lines, e.g. `gpt-5.4 at https://api.openai.com/v1`. */
  readonly description: string;
  /**
   * Sends one request.
   *
   * @throws ToolRuntimeError `model_error` with a readable message when the provider fails (after
   *   its retries), `aborted` when `signal` aborts.
   */
  create(request: ModelRequest, options: { signal: AbortSignal }): Promise<ModelResponse>;
}

/** The item types of the provider's own tool calls the loop answers (`apply_patch`, `shell`). */
export const NATIVE_CALL_TYPES: ReadonlySet<string> = new Set(['apply_patch_call', 'shell_call']);

/** True when `item` is a function call. */
export function isFunctionCall(item: ResponseItem): item is FunctionCallItem {
  return item.type === 'function_call' && typeof item.call_id === 'string' && typeof item.name === 'string';
}

/** The text of the assistant messages in `output`, joined by blank lines. */
export function outputText(output: ResponseItem[]): string {
  const texts: string[] = [];
  for (const item of output) {
    if (item.type !== 'message' || !Array.isArray(item.content)) continue;
    for (const part of item.content as Array<{ type?: string; text?: string }>) {
      if (part.type === 'output_text' && typeof part.text === 'string') texts.push(part.text);
    }
  }
  return texts.join('\n\n');
}
