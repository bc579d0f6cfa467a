import type { ProviderTool } from '../model/responses-model.js';
import type { ToolDefinition } from '../sidecar-client/sidecar-types.js';

/** How deferred tools reach the model. */
export type ToolSearchMode = 'hosted' | 'client';

/** Options of schema collection. */
export interface CollectProviderToolsOptions {
  /** `hosted`: everything sent, deferred functions marked `defer_loading`, plus `{type:'tool_search'}`.
   *  `client`: deferred tools left out, plus the controller's own `tool_search` function. */
  toolSearch: ToolSearchMode;
  /** Send namespaced tools as plain functions named `namespace__name`. */
  flattenNamespaces: boolean;
}

/** The name the controller's own search function has. */
export const CLIENT_TOOL_SEARCH_NAME = 'tool_search';

/** Separator of flattened names: `fixture_ns__lookup`. */
export const FLATTEN_SEPARATOR = '__';

/** The controller's client-side `tool_search` function definition. */
export function clientToolSearchTool(): ProviderTool {
  return {
    type: 'function',
    name: CLIENT_TOOL_SEARCH_NAME,
    description:
      'Search for more tools. Some tools are not loaded yet; describe what you need and the best ' +
      'matches are loaded, so you can call them from your next step. Call a tool only after it is loaded.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What the tool should do, in a few words.' },
        limit: { type: 'integer', minimum: 1, maximum: 20, description: 'How many tools to load at most (default 8).' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    strict: false,
  };
}

/** One function tool, flattened or not, deferred or not. */
export function functionTool(tool: ToolDefinition, options: { flatten: boolean; deferred: boolean }): ProviderTool {
  return {
    type: 'function',
    name: options.flatten && tool.namespace ? `${tool.namespace}${FLATTEN_SEPARATOR}${tool.name}` : tool.name,
    description: tool.description,
    parameters: tool.parameters,
    strict: tool.strict,
    ...(options.deferred ? { defer_loading: true } : {}),
  };
}

/**
 * Groups tools into provider tools, keeping the sidecar's order: a namespace object stands where
 * the namespace's first tool stood. `deferred` marks functions with `defer_loading`.
 */
export function groupProviderTools(
  tools: ToolDefinition[],
  options: { flatten: boolean; markDeferred: boolean },
): ProviderTool[] {
  const result: ProviderTool[] = [];
  const namespaces = new Map<string, ProviderTool[]>();
  for (const tool of tools) {
    const entry = functionTool(tool, { flatten: options.flatten, deferred: options.markDeferred && tool.deferLoading });
    if (!tool.namespace || options.flatten) {
      result.push(entry);
      continue;
    }
    let members = namespaces.get(tool.namespace);
    if (!members) {
      members = [];
      namespaces.set(tool.namespace, members);
      result.push({ type: 'namespace', name: tool.namespace, description: tool.namespaceDescription ?? '', tools: members });
    }
    members.push(entry);
  }
  return result;
}

/**
 * Schema collection: the sidecar's tool set as Responses API tools.
 *
 * - `{type:'function', name, description, parameters, strict}` per tool;
 * - tools sharing a namespace grouped as `{type:'namespace', name, description, tools}` (unless
 *   flattened to `namespace__name`);
 * - hosted search: deferred functions carry `defer_loading: true` and `{type:'tool_search'}` is added;
 * - client search: deferred tools are left out and the `tool_search` function is added.
 * Nothing is added for search when no tool is deferred.
 */
export function collectProviderTools(tools: ToolDefinition[], options: CollectProviderToolsOptions): ProviderTool[] {
  const anyDeferred = tools.some((tool) => tool.deferLoading);
  if (options.toolSearch === 'hosted') {
    const result = groupProviderTools(tools, { flatten: options.flattenNamespaces, markDeferred: true });
    if (anyDeferred) result.push({ type: 'tool_search' });
    return result;
  }
  const result = groupProviderTools(
    tools.filter((tool) => !tool.deferLoading),
    { flatten: options.flattenNamespaces, markDeferred: false },
  );
  if (anyDeferred) result.push(clientToolSearchTool());
  return result;
}
