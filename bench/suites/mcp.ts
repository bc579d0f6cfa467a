// MCP both ways. Out: a no-op call through the sidecar's MCP server (`--mcp stdio`, the fixture
// catalog's `noop`, so the call goes through the TurnSession) against the MCP SDK's own minimal
// server with one no-op tool, both stdio children run by tsx, same client, same run. In: what a
// mounted MCP server (deferred) adds to a turn's assembly, against the same catalog without it,
// and what it adds to the tools sent to the model (client tool search: nothing but `tool_search`).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { collectProviderTools } from '../../controller/loop/collect-provider-tools.js';
import { assembleToolSet, type Catalogs, type CategoryContext } from '../../sidecar/categories/category.js';
import { createMcpServersState, createMcpServerTools } from '../../sidecar/categories/mcp-servers.js';
import type { McpServerSpec } from '../../sidecar/categories/mcp/mcp-servers-file.js';
import type { SidecarConfig } from '../../sidecar/sidecar-config.js';
import { defaultSidecarLimits } from '../../sidecar/sidecar-limits.js';
import { collectToolSchemas, silentLogger } from '../../src/index.js';
import { createFixtureCatalogs } from '../../test/fixtures/fixture-categories.js';
import { quantile, type BenchRow } from '../bench-row.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = `${root}node_modules/.bin/tsx`;
const WARM_UP = 3_000;
const ROUNDS = 5;
const PER_ROUND = 600;
const IN_FLIGHT = 32;
const THROUGHPUT_MS = 4_000;
const ASSEMBLIES = 3_000;

async function connect(args: string[]): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StdioClientTransport({ command: tsx, args, cwd: root, stderr: 'inherit' }));
  return client;
}

const noop = (client: Client) => async () => {
  const result = await client.callTool({ name: 'noop', arguments: {} });
  if (result.isError) throw new Error(`noop failed: ${JSON.stringify(result.content)}`);
};

async function samples(call: () => Promise<void>, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let index = 0; index < count; index++) {
    const start = performance.now();
    await call();
    out.push((performance.now() - start) * 1000);
  }
  return out;
}

/** Completions per second with `IN_FLIGHT` outstanding, for `ms`. */
async function throughput(call: () => Promise<void>, ms: number): Promise<number> {
  let done = 0;
  const start = performance.now();
  const until = start + ms;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < until) {
        await call();
        done++;
      }
    }),
  );
  return (done * 1000) / (performance.now() - start);
}

/** Microseconds per assembly (catalog run + schemas collected, as the sidecar does at open), p50. */
async function assemblyP50(catalogs: Catalogs, context: CategoryContext): Promise<{ p50: number; tools: number }> {
  let tools = 0;
  const times: number[] = [];
  for (let index = 0; index < ASSEMBLIES; index++) {
    const start = performance.now();
    const assembled = await assembleToolSet(catalogs, context);
    collectToolSchemas(assembled.tools);
    times.push((performance.now() - start) * 1000);
    tools = assembled.tools.length;
  }
  return { p50: quantile(times.slice(ASSEMBLIES / 3), 0.5), tools };
}

export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-mcp-'));
  const sidecar = await connect([`${root}test/fixtures/fixture-sidecar.ts`, '--workspace', dir, '--state-dir', join(dir, 'state'), '--log-level', 'warn', '--mcp', 'stdio']);
  const reference = await connect([`${root}bench/fixtures/mcp-noop-server.ts`]);
  const config: SidecarConfig = { workspace: dir, stateDir: join(dir, 'state'), commandEnv: {}, commandEnvAllowList: ['PATH', 'HOME'], limits: defaultSidecarLimits };
  const spec: McpServerSpec = {
    name: 'everything',
    description: 'server-everything',
    trusted: false,
    timeoutMs: 30_000,
    transport: 'stdio',
    command: process.execPath,
    args: [`${root}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'],
    env: {},
  };
  const mounted = createMcpServersState({ ...config, mcpServers: [spec] }, { logger: silentLogger });
  mounted.start();
  try {
    const targets = { sidecar: noop(sidecar), reference: noop(reference) };
    for (const call of Object.values(targets)) await samples(call, WARM_UP);
    const warm: Record<keyof typeof targets, number[]> = { sidecar: [], reference: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of ['sidecar', 'reference'] as const) warm[name].push(...(await samples(targets[name], PER_ROUND)));
    }
    // The concurrent path warms up apart from the sequential one (in-process, the sidecar's rate
    // went from 2,800 to 9,300 calls/s over its first five seconds): both get the same warm-up.
    for (const call of Object.values(targets)) await throughput(call, 2_000);
    // Interleaved windows, as the round trips: the shared machine's noise falls on both alike.
    const rates: Record<keyof typeof targets, number[]> = { sidecar: [], reference: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of ['sidecar', 'reference'] as const) rates[name].push(await throughput(targets[name], THROUGHPUT_MS / ROUNDS));
    }
    const sidecarRate = quantile(rates.sidecar, 0.5);
    const referenceRate = quantile(rates.reference, 0.5);
    const sidecarP50 = quantile(warm.sidecar, 0.5);
    const referenceP50 = quantile(warm.reference, 0.5);

    const context: CategoryContext = {
      turn: { agentId: 'bench', turnId: 'bench', kind: 'text', enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {} },
      config,
      signal: new AbortController().signal,
    };
    const plain = createFixtureCatalogs({ stateDir: join(dir, 'state') });
    const withServer: Catalogs = { ...plain, text: [...plain.text, (ctx) => createMcpServerTools(ctx, mounted, 30_000)] };
    await createMcpServerTools(context, mounted, 30_000); // connected and listed before timing
    const without = await assemblyP50(plain, context);
    const withMounted = await assemblyP50(withServer, context);
    const definitions = async (catalogs: Catalogs) =>
      collectToolSchemas((await assembleToolSet(catalogs, context)).tools).map((schema) => ({ ...schema, parameters: schema.parameters as Record<string, unknown> }));
    const promptBytes = async (catalogs: Catalogs) =>
      JSON.stringify(collectProviderTools((await definitions(catalogs)) as never, { toolSearch: 'client', flattenNamespaces: false })).length;
    const bytesWithout = await promptBytes(plain);
    const bytesWith = await promptBytes(withServer);
    const added = withMounted.tools - without.tools;

    return [
      {
        suite: 'mcp',
        name: 'no-op call via the sidecar MCP server (stdio), p50',
        value: sidecarP50,
        unit: 'µs',
        reference: `MCP SDK minimal server (stdio) ${referenceP50.toFixed(0)} µs`,
        ratio: sidecarP50 / referenceP50,
        note: 'goal ≤ 1.1×',
      },
      {
        suite: 'mcp',
        name: `no-op calls via the sidecar MCP server, ${IN_FLIGHT} in flight`,
        value: sidecarRate,
        unit: 'calls/s',
        reference: `MCP SDK minimal server ${referenceRate.toFixed(0)} calls/s`,
        ratio: sidecarRate / referenceRate,
        note: 'goal ≥ 0.9×',
      },
      {
        suite: 'mcp',
        name: `turn assembly with a mounted deferred server (+${added} tools), p50`,
        value: withMounted.p50,
        unit: 'µs',
        reference: `same catalog without it ${without.p50.toFixed(1)} µs`,
        ratio: withMounted.p50 / without.p50,
        note: 'catalog run + schemas collected',
      },
      {
        suite: 'mcp',
        name: 'tools sent to the model with the mounted server (client tool search)',
        value: bytesWith,
        unit: 'JSON bytes',
        reference: `without it ${bytesWithout} bytes`,
        ratio: bytesWith / bytesWithout,
        note: `${added} deferred tools: ${bytesWith === bytesWithout ? 'nothing added (tool_search was there already)' : 'only tool_search is added'}`,
      },
    ];
  } finally {
    await Promise.all([sidecar.close(), reference.close(), mounted.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}
