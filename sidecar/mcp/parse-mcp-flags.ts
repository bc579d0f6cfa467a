import type { ApprovalPolicy } from '../categories/category.js';
import { isLoopbackAddress } from '../../src/grpc-server/listen-address.js';

/** The sidecar's MCP flags, as parseArgs gives them. */
export const mcpFlags = {
  mcp: { type: 'string' },
  'mcp-listen': { type: 'string' },
  'mcp-agent': { type: 'string' },
  'mcp-approve': { type: 'string' },
  'mcp-servers': { type: 'string' },
} as const;

/** How the sidecar serves MCP (`--mcp stdio`, `--mcp-listen ADDR`). */
export interface McpCliOptions {
  /** `--mcp stdio`: MCP on stdin/stdout instead of the gRPC port. */
  stdio: boolean;
  /** `--mcp-listen ADDR`: Streamable HTTP at http://ADDR/mcp, beside the gRPC port. */
  listen?: string;
  /** `--mcp-agent ID` (default `mcp`): the agent every MCP session acts as. */
  agentId: string;
  /** `--mcp-approve` (default `destructive`). */
  approvalPolicy: ApprovalPolicy;
}

const AGENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Reads the MCP flags: undefined when neither `--mcp` nor `--mcp-listen` is given (then
 * `--mcp-agent` and `--mcp-approve` are refused as meaningless).
 *
 * @throws ToolRuntimeError `invalid_request` (the CLI's usage error) on a bad value, a non-loopback
 *   `--mcp-listen` without a token.
 */
export function parseMcpFlags(
  values: { mcp?: string; 'mcp-listen'?: string; 'mcp-agent'?: string; 'mcp-approve'?: string; 'exit-on-stdin-eof'?: boolean },
  options: { hasToken: boolean; usageError: (message: string) => Error },
): McpCliOptions | undefined {
  const { usageError } = options;
  if (values.mcp === undefined && values['mcp-listen'] === undefined) {
    if (values['mcp-agent'] !== undefined || values['mcp-approve'] !== undefined) throw usageError('--mcp-agent and --mcp-approve need --mcp stdio or --mcp-listen ADDR');
    return undefined;
  }
  // stdin is the protocol's: its end already ends the sidecar.
  if (values.mcp === 'stdio' && values['exit-on-stdin-eof']) throw usageError('--mcp stdio reads the protocol from stdin and exits at its end: drop --exit-on-stdin-eof');
  if (values.mcp !== undefined && values.mcp !== 'stdio') throw usageError(`--mcp: expected stdio, got ${JSON.stringify(values.mcp)} (for HTTP use --mcp-listen ADDR)`);
  const listen = values['mcp-listen'];
  if (listen !== undefined && !options.hasToken && !isLoopbackAddress(listen)) {
    throw usageError(`refusing to serve MCP on ${listen} without --token-file: use a loopback address (127.0.0.1, ::1, localhost) or unix:/path, or give a token`);
  }
  const agentId = values['mcp-agent'] ?? 'mcp';
  if (!AGENT_ID.test(agentId)) throw usageError(`--mcp-agent: an agent id is 1-128 letters, digits, ".", "_" or "-", got ${JSON.stringify(agentId)}`);
  const mode = values['mcp-approve'] ?? 'destructive';
  if (mode !== 'none' && mode !== 'destructive' && mode !== 'not_read_only') {
    throw usageError(`--mcp-approve: expected none, destructive or not_read_only, got ${JSON.stringify(mode)}`);
  }
  return { stdio: values.mcp === 'stdio', ...(listen !== undefined ? { listen } : {}), agentId, approvalPolicy: { mode, toolNames: [] } };
}
