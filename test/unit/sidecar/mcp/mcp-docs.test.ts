import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readAgentsFile } from '../../../../controller/control-plane/cli/serve/read-agents-file.js';
import { readMcpServersFile } from '../../../../sidecar/categories/mcp/mcp-servers-file.js';
import { parseSidecarArgs } from '../../../../sidecar/parse-sidecar-args.js';

// The examples of docs/mcp.md are read by the code they document, so they cannot drift.
const page = readFileSync(fileURLToPath(new URL('../../../../docs/mcp.md', import.meta.url)), 'utf8');
const example = (tag: string) => {
  const match = new RegExp('```json ' + tag + '\\n([\\s\\S]*?)```').exec(page);
  if (!match) throw new Error(`docs/mcp.md has no \`\`\`json ${tag} block`);
  return match[1]!;
};
const dir = mkdtempSync(join(tmpdir(), 'mcp-docs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('docs/mcp.md examples', () => {
  it('the servers file reads as the page says', () => {
    writeFileSync(join(dir, 'tracker.token'), 'abc\n');
    writeFileSync(join(dir, 'servers.json'), example('mcp-servers'));
    const servers = readMcpServersFile(join(dir, 'servers.json'));
    expect(servers.map((server) => [server.name, server.transport, server.trusted])).toEqual([
      ['everything', 'stdio', false],
      ['tracker', 'http', true],
    ]);
    expect(servers[1]).toMatchObject({ headers: { Authorization: 'Bearer abc' }, timeoutMs: 30_000 });
  });

  it('the agents-file entry mounts its servers file', async () => {
    writeFileSync(join(dir, 'agents.json'), example('agents-file'));
    const agents = await readAgentsFile(join(dir, 'agents.json'));
    expect(agents.get('research-agent')).toMatchObject({ mcpServers: join(dir, 'agents/research-mcp.json') });
  });

  it('the client configuration starts the sidecar with flags it takes', () => {
    const config = JSON.parse(example('client-config')) as { mcpServers: Record<string, { command: string; args: string[] }> };
    const args = Object.values(config.mcpServers)[0]!.args.slice(1);
    mkdirSync(join(dir, 'project'));
    const index = args.indexOf('--workspace');
    args[index + 1] = join(dir, 'project');
    expect(parseSidecarArgs(args, {}).mcp?.stdio).toBe(true);
  });
});
