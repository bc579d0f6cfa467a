import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { HealthCheckResponse_ServingStatus, HealthClient } from '../../../src/gen/grpc/health/v1/health.js';
import { watchMcpServerStatus, type McpServerStatus } from '../../../sidecar/categories/mcp/mcp-server-status.js';
import { startSidecar } from '../../fixtures/start-sidecar.js';
import { localTokenOptions } from '../sidecar/turn-driver.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../../src/index.js';
import { McpConnection } from '../../../sidecar/categories/mcp/mcp-connection.js';
import type { McpServerSpec } from '../../../sidecar/categories/mcp/mcp-servers-file.js';
import type { SidecarConfig } from '../../../sidecar/sidecar-config.js';
import { defaultSidecarLimits } from '../../../sidecar/sidecar-limits.js';
import { testSandboxSettings } from '../../fixtures/test-sandbox.js';

// A mounted stdio MCP server's restarts, with a server slow both ways (slow-mcp-server.mjs). Under
// --sandbox off, so SIGTERM reaches the server itself and its slow exit is real.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const server = `${root}test/fixtures/mcp/slow-mcp-server.mjs`;
const dir = mkdtempSync(join(tmpdir(), 'mcp-restart-'));
const connections: McpConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((connection) => connection.close()));
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

const config: SidecarConfig = {
  workspace: dir,
  stateDir: join(dir, 'state'),
  commandEnv: {},
  commandEnvAllowList: ['PATH', 'HOME'],
  limits: { ...defaultSidecarLimits },
  sandbox: testSandboxSettings(join(dir, 'state'), 'off'),
};

function recordingLogger() {
  const lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, ...(fields ? { fields } : {}) });
  const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, lines };
}

function connect(env: Record<string, string>, timeoutMs = 60_000) {
  const spec = { name: 'slow', description: 'slow server', trusted: false, timeoutMs, transport: 'stdio', command: process.execPath, args: [server], env } as McpServerSpec;
  const { logger, lines } = recordingLogger();
  const connection = new McpConnection(spec, { config, logger, timings: { backoffMs: 200, maxBackoffMs: 1_000, connectTimeoutMs: 30_000 } });
  connections.push(connection);
  connection.start();
  return { connection, lines };
}

async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const downs = (lines: ReturnType<typeof recordingLogger>['lines']) => lines.filter((line) => line.message === 'mcp server down; restarting');

describe('a mounted MCP server that restarts', () => {
  it('a predecessor slow to die does not kill its replacement (issue 36, item 3)', async () => {
    // Starts in 2.5 s, exits 1.5 s after SIGTERM: the old process dies while its replacement connects.
    const { connection, lines } = connect({ SLOW_START_MS: '2500', SLOW_TERM_MS: '1500' }, 500);
    await until(() => connection.up, 'the first connection');
    const signal = new AbortController().signal;
    await expect(connection.call('hang', {}, { signal })).rejects.toThrow(/did not answer within 500 ms; it is being restarted/);
    await until(() => connection.up, 'the replacement');
    // Well past the old process's exit: the replacement is still up, and it was the only restart.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(connection.up).toBe(true);
    expect(downs(lines)).toHaveLength(1);
    const answer = await connection.call('noop', {}, { signal });
    expect(answer.content).toEqual([{ type: 'text', text: 'ok' }]);
  }, 60_000);

  it('a server that fails at start says its first error line and the likely cause, not only its last line', async () => {
    const seen: McpServerStatus[] = [];
    const stop = watchMcpServerStatus((status) => seen.push(status));
    const { connection, lines } = connect({ FAIL_AT_START: '1' });
    await until(() => downs(lines).length > 0, 'the failure');
    const [down] = downs(lines);
    expect(down!.level).toBe('error');
    const reason = String(down!.fields?.reason);
    expect(reason).toContain("its first error: Error: Cannot find module '/tmp/gone/server.js'");
    expect(reason).toContain('likely cause: a file or command it needs is not visible inside the sandbox');
    expect(reason).toContain('Node.js v20.0.0');
    await expect(connection.call('noop', {}, { signal: new AbortController().signal })).rejects.toThrow(/Cannot find module/);
    stop();
    expect(seen.at(-1)).toMatchObject({ name: 'slow', up: false, reason: expect.stringContaining('Cannot find module') });
  }, 60_000);

  it('a server that is down shows in the sidecar\'s health under its own name', async () => {
    const servers = join(dir, 'servers.json');
    writeFileSync(servers, JSON.stringify({ mcpServers: { broken: { command: process.execPath, args: [server], env: { FAIL_AT_START: '1' } } } }));
    const sidecar = await startSidecar({ args: ['--workspace', dir, '--state-dir', join(dir, 'state'), '--sandbox', 'off', '--mcp-servers', servers, '--log-level', 'error'] });
    try {
      const check = () =>
        new Promise<HealthCheckResponse_ServingStatus | string>((resolve) => {
          const client = new HealthClient(sidecar.address, grpc.credentials.createInsecure(), localTokenOptions(sidecar.address));
          client.check({ service: 'toolruntime.v1.McpServer/broken' }, (error, response) => {
            client.close();
            resolve(error ? `error ${error.code}` : response.status);
          });
        });
      const deadline = Date.now() + 30_000;
      let status = await check();
      while (status !== HealthCheckResponse_ServingStatus.NOT_SERVING && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = await check();
      }
      expect(status).toBe(HealthCheckResponse_ServingStatus.NOT_SERVING);
      expect(sidecar.stderr()).toContain("its first error: Error: Cannot find module '/tmp/gone/server.js'");
    } finally {
      await sidecar.stop();
    }
  }, 60_000);
});
