import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpTurnServer, type McpServeOptions, type McpTurnServer } from './mcp-turn-server.js';

/**
 * Serves MCP on this process's stdin and stdout: one session, one turn (see createMcpTurnServer).
 * stdout then carries only the protocol (the sidecar logs on stderr). `onEnd` is called once when
 * the client goes away (stdin ends or the transport closes); the turn's calls are aborted first.
 */
export async function serveMcpStdio(options: McpServeOptions & { onEnd: (why: string) => void }): Promise<McpTurnServer> {
  const turn = createMcpTurnServer({ ...options, label: `stdio-${process.pid}` });
  const transport = new StdioServerTransport(process.stdin, process.stdout);
  let ended = false;
  const end = (why: string) => {
    if (ended) return;
    ended = true;
    turn.close(why);
    options.onEnd(why);
  };
  transport.onclose = () => end('the MCP transport closed');
  // The SDK's stdio transport does not watch for end-of-file: a client that exits closes stdin.
  process.stdin.once('end', () => end('stdin reached end-of-file'));
  process.stdin.once('close', () => end('stdin closed'));
  await turn.server.connect(transport);
  return turn;
}
