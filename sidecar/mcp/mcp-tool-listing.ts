import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ContentPart, WorkerAgentTool } from '../../src/index.js';
import { toolKey, toolParameters } from '../../src/schema/collect-tool-schemas.js';
import { safeJsonStringify } from '../turn/build-result.js';
import type { CallResult } from '../turn/turn-event.js';

/**
 * One tool as an MCP client lists it: `namespace.name` for a namespaced tool (a tool or namespace
 * name never holds a dot, so the split is unambiguous), the same JSON Schema a Turn client gets as
 * `inputSchema`, `readOnlyHint`/`destructiveHint` from `isReadOnly`/`isDestructive`, and the
 * tool's `outputSchema` when it declares one.
 *
 * @throws ToolRuntimeError `invalid_definition` as `toolParameters` does.
 */
export function toMcpTool(tool: WorkerAgentTool): Tool {
  const listed: Tool = {
    name: toolKey(tool.name, tool.namespace),
    description: tool.namespaceDescription ? `${tool.description}\n\n(${tool.namespace}: ${tool.namespaceDescription})` : tool.description,
    inputSchema: toolParameters(tool) as Tool['inputSchema'],
    annotations: { readOnlyHint: tool.isReadOnly, destructiveHint: tool.isDestructive },
  };
  if (tool.outputSchema !== undefined) listed.outputSchema = tool.outputSchema as Tool['outputSchema'];
  return listed;
}

/** Splits an MCP tool name back into the turn's (namespace, name). */
export function fromMcpToolName(name: string): { namespace: string; name: string } {
  const dot = name.indexOf('.');
  return dot === -1 ? { namespace: '', name } : { namespace: name.slice(0, dot), name: name.slice(dot + 1) };
}

/**
 * A call's result as an MCP tool result. An error (bad arguments, denied, aborted, the tool threw)
 * is `isError: true` with the model-facing message, never a protocol error. A `json` part becomes
 * text (its JSON); for a tool that declares `outputSchema`, the first `json` part is also the
 * result's `structuredContent`.
 */
export function toMcpCallResult(result: CallResult, tool: WorkerAgentTool | undefined): CallToolResult {
  const content: CallToolResult['content'] = [];
  let structured: Record<string, unknown> | undefined;
  for (const part of result.content) {
    content.push(toMcpContent(part));
    if (part.type === 'json' && structured === undefined && tool?.outputSchema !== undefined && isRecord(part.value)) structured = part.value;
  }
  const answer: CallToolResult = { content };
  if (result.error) answer.isError = true;
  else if (structured !== undefined) answer.structuredContent = structured;
  return answer;
}

function toMcpContent(part: ContentPart): CallToolResult['content'][number] {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'image':
      return { type: 'image', data: Buffer.from(part.data).toString('base64'), mimeType: part.mimeType };
    case 'json':
      return { type: 'text', text: safeJsonStringify(part.value) };
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
