import { duplicateToolError, toolKey } from '../schema/collect-tool-schemas.js';
import type { WorkerAgentTool } from './worker-agent-tool.js';

/**
 * The turn's tools keyed by `toolKey(name, namespace)`, for dispatching the model's calls.
 *
 * @throws ToolRuntimeError `duplicate_tool` when two tools share a namespace and name.
 */
export function agentToolMap(tools: readonly WorkerAgentTool[]): Map<string, WorkerAgentTool> {
  const map = new Map<string, WorkerAgentTool>();
  for (const tool of tools) {
    const key = toolKey(tool.name, tool.namespace);
    if (map.has(key)) throw duplicateToolError(key);
    map.set(key, tool);
  }
  return map;
}
