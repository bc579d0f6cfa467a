import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMcpServersFile } from '../../../../sidecar/categories/mcp/mcp-servers-file.js';
import { loadSidecarArgs, parseSidecarArgs } from '../../../../sidecar/parse-sidecar-args.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-args-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, value: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
};

describe('the sidecar MCP flags', () => {
  it('serves nothing over MCP by default; --mcp stdio and --mcp-listen fill the defaults', () => {
    expect(parseSidecarArgs(['--workspace', dir], {}).mcp).toBeUndefined();
    expect(parseSidecarArgs(['--workspace', dir, '--mcp', 'stdio'], {}).mcp).toEqual({ stdio: true, agentId: 'mcp', approvalPolicy: { mode: 'destructive', toolNames: [] } });
    expect(parseSidecarArgs(['--workspace', dir, '--mcp-listen', '127.0.0.1:0', '--mcp-agent', 'ide', '--mcp-approve', 'none'], {}).mcp).toEqual({
      stdio: false,
      listen: '127.0.0.1:0',
      agentId: 'ide',
      approvalPolicy: { mode: 'none', toolNames: [] },
    });
  });

  it('refuses bad values, and a non-loopback --mcp-listen without a token', () => {
    expect(() => parseSidecarArgs(['--workspace', dir, '--mcp', 'http'], {})).toThrow(/--mcp: expected stdio/);
    expect(() => parseSidecarArgs(['--workspace', dir, '--mcp', 'stdio', '--mcp-approve', 'always'], {})).toThrow(/--mcp-approve: expected none, destructive or not_read_only/);
    expect(() => parseSidecarArgs(['--workspace', dir, '--mcp-agent', 'x'], {})).toThrow(/need --mcp stdio or --mcp-listen/);
    expect(() => parseSidecarArgs(['--workspace', dir, '--mcp', 'stdio', '--exit-on-stdin-eof'], {})).toThrow(/drop --exit-on-stdin-eof/);
    expect(() => parseSidecarArgs(['--workspace', dir, '--mcp-listen', '0.0.0.0:7000'], {})).toThrow(/refusing to serve MCP on 0.0.0.0:7000 without --token-file/);
    const token = file('token', 'secret\n');
    expect(parseSidecarArgs(['--workspace', dir, '--mcp-listen', '0.0.0.0:7000', '--token-file', token], {}).mcp?.listen).toBe('0.0.0.0:7000');
  });
});

describe('readMcpServersFile', () => {
  it('reads stdio and HTTP servers, paths from the file\'s folder, header values from files', () => {
    file('api.token', 'tok-123\nignored\n');
    const path = file('servers.json', {
      mcpServers: {
        local: { command: 'npx', args: ['-y', 'some-server'], env: { A: 'b' }, cwd: 'sub', trusted: true },
        remote: { url: 'https://mcp.example.com/mcp', headers: { 'X-Team': 'a' }, headerFiles: { Authorization: { file: 'api.token', prefix: 'Bearer ' } }, timeoutMs: 5_000 },
      },
    });
    expect(readMcpServersFile(path)).toEqual([
      { name: 'local', description: 'Tools of the MCP server "local".', trusted: true, timeoutMs: 60_000, transport: 'stdio', command: 'npx', args: ['-y', 'some-server'], env: { A: 'b' }, cwd: join(dir, 'sub') },
      { name: 'remote', description: 'Tools of the MCP server "remote".', trusted: false, timeoutMs: 5_000, transport: 'http', url: 'https://mcp.example.com/mcp', headers: { 'X-Team': 'a', Authorization: 'Bearer tok-123' }, secretFiles: [join(dir, 'api.token')] },
    ]);
    const parsed = parseSidecarArgs(['--workspace', dir, '--mcp-servers', path], {}, { readMcpServersFile });
    expect(parsed.config.mcpServers).toHaveLength(2);
    // The token file is out of the sandbox's reach, as the sidecar's own secrets are.
    expect(parsed.config.sandbox?.hide).toEqual(expect.arrayContaining([join(dir, 'api.token'), path]));
  });

  it('refuses a bad file in one line that says where', async () => {
    expect(() => readMcpServersFile(join(dir, 'missing.json'))).toThrow(/cannot read it as JSON/);
    expect(() => readMcpServersFile(file('shape.json', { servers: {} }))).toThrow(/wrong at .*Expected \{"mcpServers"/);
    expect(() => readMcpServersFile(file('both.json', { mcpServers: { a: { command: 'x', url: 'http://h/' } } }))).toThrow(/wrong at mcpServers.a/);
    expect(() => readMcpServersFile(file('name.json', { mcpServers: { 'my.server': { command: 'x' } } }))).toThrow(/server name "my.server" becomes its tools' namespace/);
    expect(() => readMcpServersFile(file('scheme.json', { mcpServers: { a: { url: 'file:///etc/passwd' } } }))).toThrow(/wrong at mcpServers.a/);
    expect(() => readMcpServersFile(file('header.json', { mcpServers: { a: { url: 'http://h/', headerFiles: { Authorization: 'nope.token' } } } }))).toThrow(/cannot read the Authorization header file nope.token/);
    await expect(loadSidecarArgs(['--workspace', dir, '--mcp-servers', join(dir, 'missing.json')], {})).rejects.toThrow(/--mcp-servers .*missing.json/);
  });
});
