import { parseArgs } from 'node:util';
import { listLocalServers, localServersDir } from '../../../src/local-servers.js';
import { parseArgsMessage } from '../../../src/cli-usage.js';

const USAGE = `Usage: npm run controller -- servers [--json]

Lists the servers of this project running on this machine as this user: every sidecar and every
control plane (serve) writes its address and token file to the runtime folder while it runs
($TOOLS_RUNTIME_RUNTIME_DIR, else $XDG_RUNTIME_DIR/tools-runtime, else
~/.local/state/tools-runtime/runtime). Clients that are given an address but no token file (npm start
-- --sidecar ADDR, the agents file, approvals --address ADDR) look the token up there.

Options:
  --json    one JSON object per server per line`;

/**
 * `servers`: prints the running local servers, one line each (kind, address, token file, pid, what
 * it serves). Returns the exit code: 0, or 2 on a usage error.
 */
export async function runServersCommand(io: { argv: string[]; env: NodeJS.ProcessEnv; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }): Promise<number> {
  let values: { json?: boolean; help?: boolean };
  try {
    values = parseArgs({ args: io.argv, options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, strict: true }).values;
  } catch (error) {
    io.stderr.write(`error: ${parseArgsMessage(error)}\n\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const servers = listLocalServers({ env: io.env });
  if (values.json) {
    for (const { entryFile: _entryFile, ...server } of servers) io.stdout.write(`${JSON.stringify(server)}\n`);
    return 0;
  }
  if (servers.length === 0) {
    io.stdout.write(`no running server is listed in ${localServersDir(io.env)}\n`);
    return 0;
  }
  for (const server of servers) {
    const what = server.workspace ? `workspace ${server.workspace}` : server.dataDir ? `data ${server.dataDir}` : '';
    io.stdout.write(`${server.kind.padEnd(13)} ${server.address.padEnd(22)} pid ${String(server.pid).padEnd(7)} token ${server.tokenFile ?? '(none)'}${what ? `  ${what}` : ''}${server.mcpUrl ? `  mcp ${server.mcpUrl}` : ''}\n`);
  }
  return 0;
}
