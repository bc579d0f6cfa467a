import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  defineWorkerTool,
  errorMessage,
  TOOL_NAME_PATTERN,
  ToolRuntimeError,
  type AgentToolResult,
  type ContentPart,
  type JSONObject,
  type Logger,
  type WorkerAgentTool,
} from '../../src/index.js';
import type { CategoryConfig } from './category-config.js';
import type { CategoryContext } from './category.js';
import type { McpConnection, McpConnectionTimings, McpToolListing } from './mcp/mcp-connection.js';
import type { McpServerSpec } from './mcp/mcp-servers-file.js';

/** The agent's mounted MCP servers, for the sidecar's lifetime. */
export interface McpServersState {
  /** The connections, once `load()` has made them (none before). */
  readonly connections: readonly McpConnection[];
  readonly logger: Logger;
  /** Loads the MCP client (only when servers are declared) and makes the connections, once. */
  load(): Promise<readonly McpConnection[]>;
  /** Starts every connection (at once: the first turn should not pay for the start-up). */
  start(): void;
  close(): Promise<void>;
}

/** How long an assembly waits for a server that is connecting or listing again. Default 3,000 ms. */
export const DEFAULT_MCP_ASSEMBLY_WAIT_MS = 3_000;

/** Creates the connections of `config.mcpServers` (none started yet). */
export function createMcpServersState(config: CategoryConfig & { mcpServers?: McpServerSpec[] }, options: { logger: Logger; timings?: Partial<McpConnectionTimings> }): McpServersState {
  const specs = config.mcpServers ?? [];
  let connections: McpConnection[] = [];
  let loading: Promise<McpConnection[]> | undefined;
  // The MCP client (the SDK, about 250 KB built) loads only for a sidecar that mounts a server.
  const load = () =>
    (loading ??= import('./mcp/mcp-connection.js').then(({ McpConnection }) => {
      connections = specs.map((spec) => new McpConnection(spec, { config, logger: options.logger, ...(options.timings ? { timings: options.timings } : {}) }));
      return connections;
    }));
  return {
    get connections() {
      return connections;
    },
    logger: options.logger,
    load: () => (specs.length === 0 ? Promise.resolve([]) : load()),
    start() {
      if (specs.length > 0) void load().then((made) => made.forEach((connection) => connection.start()));
    },
    async close() {
      if (loading) await Promise.all((await loading).map((connection) => connection.close()));
    },
  };
}

// Wrapped tools per listing: a listing is a new array each time it is read again, so an unchanged
// server costs an assembly one WeakMap lookup (bench: "assembly with a deferred MCP server").
const wrapped = new WeakMap<McpToolListing, WorkerAgentTool[]>();

/**
 * The mounted MCP servers' tools for a TEXT turn (a workflow task turn gets none: its catalog is
 * fixed): one namespace per server, every tool deferred behind tool search, so a server with a
 * hundred tools costs the prompt nothing until searched. The servers are asked in parallel, each
 * for at most `waitMs`: one that is down or slow adds its last listing (whose calls then answer
 * why it is down) or nothing, and never holds up the others. A listing changed by
 * `notifications/tools/list_changed` shows at the next assembly.
 */
export async function createMcpServerTools(context: CategoryContext, state: McpServersState, waitMs = DEFAULT_MCP_ASSEMBLY_WAIT_MS): Promise<WorkerAgentTool[]> {
  if (context.turn.kind !== 'text') return [];
  const connections = await state.load();
  if (connections.length === 0) return [];
  const listings = await Promise.all(connections.map((connection) => connection.tools(context.signal, waitMs)));
  const tools: WorkerAgentTool[] = [];
  listings.forEach((listing, index) => {
    const connection = connections[index]!;
    let made = wrapped.get(listing);
    if (!made) wrapped.set(listing, (made = wrapListing(connection, listing, state.logger)));
    tools.push(...made);
  });
  return tools;
}

function wrapListing(connection: McpConnection, listing: McpToolListing, logger: Logger): WorkerAgentTool[] {
  const used = new Set<string>();
  const tools: WorkerAgentTool[] = [];
  for (const tool of listing) {
    const name = uniqueName(tool.name, used);
    try {
      tools.push(wrapTool(connection, tool, name));
    } catch (error) {
      // A tool that cannot be offered (its schema is no object) is left out; the others stay.
      logger.warn('an MCP tool was left out of the catalog', { server: connection.spec.name, tool: tool.name, error: errorMessage(error) });
    }
  }
  return tools;
}

/** The tool's name made fit for a provider (`^[a-zA-Z0-9_-]{1,64}$`), unique within its server. */
function uniqueName(given: string, used: Set<string>): string {
  const base = TOOL_NAME_PATTERN.test(given) ? given : given.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64) || 'tool';
  let name = base;
  for (let n = 2; used.has(name); n++) name = `${base.slice(0, 60)}_${n}`;
  used.add(name);
  return name;
}

function wrapTool(connection: McpConnection, tool: Tool, name: string): WorkerAgentTool {
  const { spec } = connection;
  // Annotations are the server's claims: believed only for a server the operator trusts. An
  // untrusted server's tools count as destructive (and not read-only) for the approval policy.
  const readOnly = spec.trusted && tool.annotations?.readOnlyHint === true;
  const destructive = spec.trusted ? !readOnly && tool.annotations?.destructiveHint !== false : true;
  const description = [tool.title && tool.title !== tool.name ? tool.title : '', tool.description ?? ''].filter(Boolean).join(': ') || `The ${tool.name} tool of ${spec.name}.`;
  return defineWorkerTool<Record<string, unknown>>({
    name,
    namespace: spec.name,
    namespaceDescription: spec.description,
    description: description.slice(0, 4_000),
    jsonSchema: { ...tool.inputSchema, type: 'object' } as JSONObject,
    ...(tool.outputSchema ? { outputSchema: tool.outputSchema as JSONObject } : {}),
    deferLoading: true,
    // Another process: its own concurrency is its business, and a hung server must not hold back
    // the turn's other calls (each call is bounded by the server's timeoutMs).
    executionMode: 'parallel',
    isReadOnly: readOnly,
    isDestructive: destructive,
    describeActivity: () => `${spec.name}.${tool.name}`,
    async execute(params, context) {
      const result = await connection.call(tool.name, params, {
        signal: context.signal,
        onProgress: (progress) => void context.emit({ kind: 'mcp.progress', payload: { server: spec.name, tool: tool.name, ...progress } }),
      });
      return toAgentToolResult(spec, tool.name, result);
    },
  });
}

/** An MCP tool result for the model: text and images as they are, the rest described, `structuredContent` as a json part. */
function toAgentToolResult(spec: McpServerSpec, toolName: string, result: CallToolResult): AgentToolResult {
  const content: ContentPart[] = [];
  for (const part of result.content ?? []) {
    switch (part.type) {
      case 'text':
        content.push({ type: 'text', text: part.text });
        break;
      case 'image':
        content.push({ type: 'image', data: Buffer.from(part.data, 'base64'), mimeType: part.mimeType });
        break;
      case 'resource':
        content.push({ type: 'text', text: 'text' in part.resource ? String(part.resource.text) : `[resource ${part.resource.uri} (${part.resource.mimeType ?? 'binary'})]` });
        break;
      case 'resource_link':
        content.push({ type: 'text', text: `[resource link ${part.uri}${part.name ? ` (${part.name})` : ''}]` });
        break;
      default:
        content.push({ type: 'text', text: `[${part.type} content omitted]` });
    }
  }
  if (result.structuredContent !== undefined) content.push({ type: 'json', value: result.structuredContent });
  if (result.isError) {
    const text = content.map((part) => (part.type === 'text' ? part.text : '')).join('\n').trim();
    throw new ToolRuntimeError('tool_failed', `${spec.name}.${toolName} reported an error: ${text || 'no message'}`);
  }
  return { content, details: { mcpServer: spec.name, tool: toolName } };
}
