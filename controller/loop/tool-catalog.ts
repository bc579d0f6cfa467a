import { isJSONObject } from '../../src/index.js';
import type { FunctionCallItem, ProviderTool } from '../model/responses-model.js';
import type { ToolDefinition } from '../sidecar-client/sidecar-types.js';
import { createToolSearcher, toolKey, type ToolSearcher } from '../tool-search/search-deferred-tools.js';
import {
  CLIENT_TOOL_SEARCH_NAME,
  collectProviderTools,
  FLATTEN_SEPARATOR,
  groupProviderTools,
  type ToolSearchMode,
} from './collect-provider-tools.js';

/** What a function call resolves to. */
export type ResolvedCall =
  /** Goes to the sidecar; `tool` is undefined for a name the tool set does not have. */
  | { kind: 'sidecar'; name: string; namespace?: string; tool?: ToolDefinition }
  /** The controller's own client-side search. */
  | { kind: 'client-search' }
  /** A deferred tool the model never loaded through search. */
  | { kind: 'not-loaded'; tool: ToolDefinition };

/** The per-turn view of the tools: what the model is offered, and how its calls map back. */
export interface ToolCatalog {
  /**
   * The provider tools for the next request: the base list, then tools loaded by search, appended.
   * The same array while nothing changes (no per-iteration work); treat it as read-only.
   */
  providerTools(): ProviderTool[];
  /** Maps a function call's name (and namespace) back to a sidecar tool. */
  resolve(call: Pick<FunctionCallItem, 'name' | 'namespace'>): ResolvedCall;
  /**
   * Answers a client-side `tool_search` call: ranks the deferred tools, loads the best ones (they
   * are appended to the tools list for the rest of the turn) and returns the text for the model.
   */
  search(argumentsJson: string): { output: string; loaded: ToolDefinition[]; isError: boolean };
}

/** Options of `createToolCatalog`. */
export interface ToolCatalogOptions {
  tools: ToolDefinition[];
  toolSearch: ToolSearchMode;
  flattenNamespaces: boolean;
  /** How many tools a search loads at most (default 8). */
  searchLimit?: number;
  /**
   * Provider tools offered in place of some sidecar tools (the Responses API's `apply_patch` and
   * `shell`, see native-tools.ts): appended to the list, while the `replaced` tools are not
   * offered as functions. Calls still resolve to them (the native calls are sent as theirs).
   */
  native?: { providerTools: ProviderTool[]; replaced: ReadonlySet<ToolDefinition> };
}

/** Creates the catalog of one turn. */
export function createToolCatalog(options: ToolCatalogOptions): ToolCatalog {
  const { tools, toolSearch, flattenNamespaces } = options;
  // Collected once per turn. The list handed to the model is the same array until a search loads
  // tools; then a new one (earlier requests keep theirs) with the new groups appended.
  const offered = options.native ? tools.filter((tool) => !options.native!.replaced.has(tool)) : tools;
  let current: ProviderTool[] = collectProviderTools(offered, { toolSearch, flattenNamespaces });
  if (options.native) current = current.concat(options.native.providerTools);
  const loaded = new Set<string>();
  const deferred = tools.filter((tool) => tool.deferLoading);
  // The BM25 index is built on the first search only: most turns never search.
  let searcher: ToolSearcher | undefined;
  const byKey = new Map(tools.map((tool) => [toolKey(tool), tool]));
  // Plain name -> the tools of that name across namespaces, for providers that drop the namespace.
  let byName: Map<string, ToolDefinition[]> | undefined;
  const clientSearch = toolSearch === 'client' && deferred.length > 0;

  const find = (name: string, namespace: string | undefined): ToolDefinition | undefined => {
    if (namespace) return byKey.get(`${namespace}.${name}`);
    if (flattenNamespaces && name.includes(FLATTEN_SEPARATOR)) {
      const at = name.indexOf(FLATTEN_SEPARATOR);
      const found = byKey.get(`${name.slice(0, at)}.${name.slice(at + FLATTEN_SEPARATOR.length)}`);
      if (found) return found;
    }
    const plain = byKey.get(name);
    if (plain) return plain;
    // Some providers drop the namespace on the way back: accept a name that is unique across namespaces.
    if (!byName) {
      byName = new Map();
      for (const tool of tools) {
        const named = byName.get(tool.name);
        if (named) named.push(tool);
        else byName.set(tool.name, [tool]);
      }
    }
    const matches = byName.get(name);
    return matches?.length === 1 ? matches[0] : undefined;
  };

  return {
    providerTools: () => current,
    resolve(call) {
      const namespace = call.namespace || undefined;
      if (clientSearch && call.name === CLIENT_TOOL_SEARCH_NAME && !namespace) return { kind: 'client-search' };
      const tool = find(call.name, namespace);
      if (!tool) return { kind: 'sidecar', name: call.name, ...(namespace ? { namespace } : {}) };
      if (toolSearch === 'client' && tool.deferLoading && !loaded.has(toolKey(tool))) return { kind: 'not-loaded', tool };
      return { kind: 'sidecar', name: tool.name, ...(tool.namespace ? { namespace: tool.namespace } : {}), tool };
    },
    search(argumentsJson) {
      let query = '';
      let limit = options.searchLimit ?? 8;
      try {
        const parsed: unknown = JSON.parse(argumentsJson);
        if (isJSONObject(parsed) && typeof parsed.query === 'string') query = parsed.query;
        if (isJSONObject(parsed) && typeof parsed.limit === 'number' && parsed.limit >= 1) limit = Math.min(20, Math.floor(parsed.limit));
      } catch {
        // handled below: an empty query is an error the model can fix
      }
      if (!query.trim()) {
        return { output: 'tool_search needs arguments {"query": "<what the tool should do>"}.', loaded: [], isError: true };
      }
      searcher ??= createToolSearcher(deferred);
      const hits = searcher.search(query, limit);
      if (hits.length === 0) {
        return { output: `No tools match "${query}". Try other words.`, loaded: [], isError: false };
      }
      const fresh = hits.filter((tool) => !loaded.has(toolKey(tool)));
      for (const tool of fresh) loaded.add(toolKey(tool));
      if (fresh.length > 0) current = current.concat(groupProviderTools(fresh, { flatten: flattenNamespaces, markDeferred: false }));
      const lines = hits.map((tool) => {
        const name = flattenNamespaces && tool.namespace ? `${tool.namespace}${FLATTEN_SEPARATOR}${tool.name}` : tool.name;
        const where = tool.namespace && !flattenNamespaces ? ` (namespace ${tool.namespace})` : '';
        return `- ${name}${where}: ${tool.description}`;
      });
      return {
        output: `Loaded ${hits.length} tool${hits.length === 1 ? '' : 's'}; you can call them now:\n${lines.join('\n')}`,
        loaded: fresh,
        isError: false,
      };
    },
  };
}
