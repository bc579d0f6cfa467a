import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { liveProcesses, waitFor } from '../../fixtures/process-tree.js';
import { testSandboxArgs } from '../../fixtures/test-sandbox.js';

// The SDK's own client drives the real sidecar entry (sidecar/main.ts through tsx, the real text
// catalog; commands under workspace-write where bubblewrap works, --sandbox off where it does
// not: test-sandbox.ts) over stdio and over Streamable HTTP.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const tsx = `${root}node_modules/.bin/tsx`;
const dir = mkdtempSync(join(tmpdir(), 'sidecar-mcp-'));
const workspace = join(dir, 'workspace');
mkdirSync(workspace);
const clients: Client[] = [];
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  for (const child of children) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

const sidecarArgs = (...extra: string[]) => [`${root}sidecar/main.ts`, '--workspace', workspace, '--state-dir', join(dir, 'state'), ...testSandboxArgs(), ...extra];

async function stdioClient(options: { elicitation: 'accept' | 'decline' | 'none' }): Promise<Client> {
  const client = new Client({ name: 'test', version: '1' }, { capabilities: options.elicitation === 'none' ? {} : { elicitation: {} } });
  if (options.elicitation !== 'none') client.setRequestHandler(ElicitRequestSchema, async () => ({ action: options.elicitation as 'accept' | 'decline' }));
  await client.connect(new StdioClientTransport({ command: tsx, args: sidecarArgs('--mcp', 'stdio'), cwd: root, stderr: 'ignore' }));
  clients.push(client);
  return client;
}

/** Starts the sidecar with `--mcp-listen 127.0.0.1:0` and resolves its MCP URL once it listens. */
/** Starts a sidecar serving MCP over HTTP; resolves its URL and the token its endpoint requires. */
async function httpSidecar(extra: string[] = []): Promise<{ url: string; token: string }> {
  const child = spawn(tsx, sidecarArgs('--mcp-listen', '127.0.0.1:0', ...extra), { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<{ url: string; token: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within 60 s; stderr:\n${stderr}`)), 60_000);
    let url = '';
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as { event: string; url?: string; tokenFile?: string };
      if (event.event === 'mcp-listening') url = event.url!;
      // The listening line follows and names the token file (generated when no --token-file is given).
      if (event.event === 'listening') {
        clearTimeout(timer);
        resolve({ url, token: readFileSync(event.tokenFile!, 'utf8').trim() });
      }
    });
    child.once('exit', (code) => reject(new Error(`the sidecar exited (${code}); stderr:\n${stderr}`)));
  });
}

const text = (result: CallToolResult) => result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');

describe('the sidecar as an MCP server, over stdio', () => {
  it('lists the text-turn catalog with its input schemas and annotations from isReadOnly/isDestructive', async () => {
    const client = await stdioClient({ elicitation: 'none' });
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect([...byName.keys()]).toEqual(expect.arrayContaining(['run_command', 'read_file', 'write_file', 'edit_file', 'list_files']));
    expect(byName.get('read_file')!.annotations).toEqual({ readOnlyHint: true, destructiveHint: false });
    expect(byName.get('write_file')!.annotations).toEqual({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get('run_command')!.annotations).toMatchObject({ destructiveHint: true });
    expect(byName.get('run_command')!.inputSchema).toMatchObject({ type: 'object', properties: { command: { type: 'string' } } });
  }, 90_000);

  it('answers invalid arguments with isError, not a protocol error', async () => {
    const client = await stdioClient({ elicitation: 'none' });
    const result = (await client.callTool({ name: 'read_file', arguments: { nope: 1 } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('invalid_arguments');
  }, 90_000);

  it('denies write_file under the destructive policy when the client cannot be asked, and writes nothing', async () => {
    const client = await stdioClient({ elicitation: 'none' });
    const result = (await client.callTool({ name: 'write_file', arguments: { path: 'denied.txt', content: 'no' } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('not approved');
    expect(text(result)).toContain('elicitation');
    expect(existsSync(join(workspace, 'denied.txt'))).toBe(false);
  }, 90_000);

  it('asks through elicitation: a declined write_file does not run', async () => {
    const client = await stdioClient({ elicitation: 'decline' });
    const result = (await client.callTool({ name: 'write_file', arguments: { path: 'declined.txt', content: 'no' } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(existsSync(join(workspace, 'declined.txt'))).toBe(false);
  }, 90_000);

  it('runs an approved run_command with its output as progress notifications', async () => {
    const client = await stdioClient({ elicitation: 'accept' });
    const progress: Progress[] = [];
    const result = (await client.callTool({ name: 'run_command', arguments: { command: 'echo first; sleep 0.3; echo second' } }, undefined, {
      onprogress: (update) => progress.push(update),
    })) as CallToolResult;
    expect(result.isError).toBeUndefined();
    expect(text(result)).toContain('second');
    const messages = progress.map((update) => update.message ?? '').join('');
    expect(messages).toContain('first');
    expect(messages).toContain('second');
    expect(progress.map((update) => update.progress)).toEqual(progress.map((_, index) => index + 1));
  }, 90_000);

  it('cancels run_command on notifications/cancelled, and its process group dies', async () => {
    const client = await stdioClient({ elicitation: 'accept' });
    // Found by their unusual durations: inside the sandbox's PID namespace $$ is not a pid seen here.
    const marked = () => liveProcesses().filter((entry) => /^sleep 30(17|18)$/.test(entry.command));
    const abort = new AbortController();
    const call = client.callTool({ name: 'run_command', arguments: { command: 'sleep 3017 & sleep 3018' } }, undefined, { signal: abort.signal });
    expect(await waitFor(() => (marked().length === 2 ? true : undefined), 30_000)).toBe(true);
    abort.abort('the test cancels');
    await expect(call).rejects.toThrow();
    expect(await waitFor(() => (marked().length === 0 ? true : undefined), 20_000)).toBe(true);
  }, 90_000);
});

describe('the sidecar as an MCP server, over Streamable HTTP', () => {
  it('serves the catalog and refuses a bad Origin with 403', async () => {
    const { url, token } = await httpSidecar();
    const authorization = `Bearer ${token}`;
    const client = new Client({ name: 'test', version: '1' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization } } }));
    clients.push(client);
    const { tools } = await client.listTools();
    expect(tools.find((tool) => tool.name === 'list_files')?.annotations?.readOnlyHint).toBe(true);
    writeFileSync(join(workspace, 'hello.txt'), 'hello over http\n');
    const read = (await client.callTool({ name: 'read_file', arguments: { path: 'hello.txt' } })) as CallToolResult;
    expect(text(read)).toContain('hello over http');
    expect(read.isError).toBeUndefined();

    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'evil', version: '1' } } };
    const refused = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', origin: 'http://evil.example', authorization },
      body: JSON.stringify(initialize),
    });
    expect(refused.status).toBe(403);
    const local = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', origin: 'http://localhost:3000', authorization },
      body: JSON.stringify(initialize),
    });
    expect(local.status).toBe(200);
    await local.body?.cancel();
  }, 90_000);

  it('requires the bearer token when the sidecar has one', async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'sesame\n');
    const { url } = await httpSidecar(['--token-file', tokenFile]);
    const anonymous = new Client({ name: 'test', version: '1' }, { capabilities: {} });
    await expect(anonymous.connect(new StreamableHTTPClientTransport(new URL(url)))).rejects.toThrow(/401|Unauthorized|token/i);
    const client = new Client({ name: 'test', version: '1' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: 'Bearer sesame' } } }));
    clients.push(client);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  }, 90_000);
});
