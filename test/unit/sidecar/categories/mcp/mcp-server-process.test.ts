import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { CategoryConfig } from '../../../../../sidecar/categories/category-config.js';
import { ProcessTransport } from '../../../../../sidecar/categories/mcp/process-transport.js';
import { startMcpServerProcess, type McpServerProcess } from '../../../../../sidecar/categories/mcp/start-mcp-server-process.js';
import { defaultSidecarLimits } from '../../../../../sidecar/sidecar-limits.js';
import { bwrapWorks, testSandboxSettings } from '../../../../fixtures/test-sandbox.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcp-server-process-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a server process to its end and returns what it wrote on stdout and stderr. */
async function runToEnd(server: McpServerProcess): Promise<{ stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  server.child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  server.child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  server.child.stdin.end();
  await server.exited;
  return { stdout, stderr };
}

describe('a stdio MCP server\'s process', () => {
  // A checkout under /tmp (mktemp -d): the sandbox's private /tmp would hide the server's script.
  it.skipIf(!bwrapWorks())('sees its own script package under /tmp, read-only, in the sandbox, with this sidecar\'s instance mark', async () => {
    const checkout = path.join(dir, 'checkout');
    mkdirSync(path.join(checkout, 'servers'), { recursive: true });
    writeFileSync(path.join(checkout, 'package.json'), '{ "name": "servers", "type": "module" }\n');
    writeFileSync(path.join(checkout, 'helper.mjs'), 'export const word = "alive";\n');
    writeFileSync(
      path.join(checkout, 'servers', 'server.mjs'),
      "import { writeFileSync } from 'node:fs';\nimport { word } from '../helper.mjs';\nlet wrote = 'written';\ntry { writeFileSync(new URL('../x', import.meta.url), 'x'); } catch { wrote = 'read-only'; }\nconsole.log(word, wrote, process.env.TOOLS_RUNTIME_SIDECAR_INSTANCE ? 'marked' : 'unmarked');\n",
    );
    const workspace = mkdtempSync(path.join(dir, 'workspace-'));
    const stateDir = mkdtempSync(path.join(dir, 'state-'));
    const config: CategoryConfig = { workspace, stateDir, commandEnv: {}, commandEnvAllowList: ['PATH'], limits: defaultSidecarLimits, sandbox: testSandboxSettings(stateDir, 'workspace-write') };
    const server = await startMcpServerProcess({ config, command: process.execPath, args: ['servers/server.mjs'], cwd: checkout, env: { PATH: process.env.PATH } });
    expect(server.sandboxed).toBe(true);
    const { stdout, stderr } = await runToEnd(server);
    expect(stderr).toBe('');
    expect(stdout.trim()).toBe('alive read-only marked');
  });

  it('keeps a character that two chunks of stderr split whole in its tail', async () => {
    const stderr = new PassThrough();
    const fake = {
      child: Object.assign(new PassThrough(), { stdout: new PassThrough(), stderr, stdin: new PassThrough() }),
      sandboxed: false,
      exited: new Promise<void>(() => {}),
      stop: async () => {},
    } as unknown as McpServerProcess;
    const transport = new ProcessTransport(fake);
    await transport.start();
    const bytes = Buffer.from('crashed: 😀 é\n');
    stderr.write(bytes.subarray(0, 11));
    stderr.write(bytes.subarray(11));
    await new Promise((resolve) => setImmediate(resolve));
    expect(transport.stderrTail).toBe('crashed: 😀 é\n');
  });
});
