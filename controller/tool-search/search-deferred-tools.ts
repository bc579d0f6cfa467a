import { isJSONObject } from '../../src/index.js';
import type { ToolDefinition } from '../sidecar-client/sidecar-types.js';
import { createBm25Index } from './bm25.js';

/** The key a tool is known by in the controller: `namespace.name`, or `name`. */
export function toolKey(tool: { name: string; namespace?: string | undefined }): string {
  return tool.namespace ? `${tool.namespace}.${tool.name}` : tool.name;
}

/** Searches a fixed set of (deferred) tools. */
export interface ToolSearcher {
  /** The best `limit` tools for `query` (default 8), best first; [] when nothing matches. */
  search(query: string, limit?: number): ToolDefinition[];
}

function parameterNames(schema: unknown, depth = 0): string[] {
  if (!isJSONObject(schema) || depth > 2) return [];
  const properties = schema.properties;
  if (!isJSONObject(properties)) return [];
  return Object.entries(properties).flatMap(([name, value]) => [name, ...parameterNames(value, depth + 1)]);
}

/**
 * Builds a BM25 searcher over tools by their names (weighed twice), descriptions, namespace and
 * namespace descriptions, and parameter names.
 */
export function createToolSearcher(tools: ToolDefinition[]): ToolSearcher {
  const byKey = new Map(tools.map((tool) => [toolKey(tool), tool]));
  const index = createBm25Index(
    tools.map((tool) => ({
      id: toolKey(tool),
      text: [
        tool.name,
        tool.name,
        tool.description,
        tool.namespace ?? '',
        tool.namespaceDescription ?? '',
        parameterNames(tool.parameters).join(' '),
      ].join('\n'),
    })),
  );
  return {
    search(query, limit = 8) {
      return index.search(query, limit).map((hit) => byKey.get(hit.id) as ToolDefinition);
    },
  };
}
