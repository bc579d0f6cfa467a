import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { createClient, openTurn, textOf } from '../sidecar/turn-driver.js';

// The real sidecar entry with --mcp-servers, driven over gRPC: the mounted server's tools reach a
// Turn client as one deferred namespace and run through the Turn.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mounted-grpc-'));
let sidecar: StartedSidecar | undefined;

afterAll(async () => {
  await sidecar?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

describe('a sidecar started with --mcp-servers', () => {
  it('offers the server as a deferred namespace on text turns and runs its calls', async () => {
    mkdirSync(join(dir, 'workspace'));
    writeFileSync(
      join(dir, 'servers.json'),
      JSON.stringify({ mcpServers: { fixture: { command: process.execPath, args: [`${root}node_modules/tsx/dist/cli.mjs`, `${root}test/fixtures/mcp/fixture-mcp-server.ts`], description: 'fixture tools' } } }),
    );
    sidecar = await startSidecar({ args: ['--workspace', join(dir, 'workspace'), '--state-dir', join(dir, 'state'), '--mcp-servers', join(dir, 'servers.json')], timeoutMs: 60_000 });
    const client = createClient(sidecar.address);
    try {
      // A turn opened while the server still starts waits 3 s at most and may not have it yet.
      let turn = await openTurn(client, 'agent');
      for (let attempt = 0; attempt < 40 && !turn.toolSet.tools.some((tool) => tool.namespace === 'fixture'); attempt++) {
        await turn.end();
        await new Promise((resolve) => setTimeout(resolve, 250));
        turn = await openTurn(client, 'agent');
      }
      const mounted = turn.toolSet.tools.filter((tool) => tool.namespace === 'fixture');
      expect(mounted.map((tool) => tool.name)).toEqual(expect.arrayContaining(['noop', 'hang', 'add_tool']));
      expect(mounted.every((tool) => tool.deferLoading && tool.destructive && tool.namespaceDescription === 'fixture tools')).toBe(true);
      const result = await turn.call('c1', 'noop', {}, { namespace: 'fixture' });
      expect(textOf(result)).toBe('ok');
      await turn.end();
    } finally {
      client.close();
    }
  }, 120_000);
});
