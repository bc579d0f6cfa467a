// Issue 23 item 8: on PostgreSQL, errors the pg pool reports as events were swallowed (a lost
// database showed nowhere). Issue 34: a task turn's claim is a lease its runner renews, so a turn
// longer than the claim expiry keeps it. Real PostgreSQL, real gRPC health on 127.0.0.1:0.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createControlPlaneServer } from '../../../controller/control-plane/grpc/control-plane-server.js';
import type { ControlPlaneStore } from '../../../controller/control-plane/domain/control-plane-store.js';
import { openPostgresStore } from '../../../controller/control-plane/store/postgres/open-postgres-store.js';
import type { OpenTaskTurn } from '../../../controller/control-plane/domain/workflows/sidecar-task-turns.js';
import { WorkflowRunner } from '../../../controller/control-plane/domain/workflows/workflow-runner.js';
import { createOpenAIResponsesModel } from '../../../controller/model/openai-responses-model.js';
import { silentLogger, type Logger } from '../../../src/index.js';
import { requirePostgres, startPostgresCluster, type PostgresCluster } from '../../fixtures/postgres-cluster.js';

const healthProto = fileURLToPath(new URL('../../../proto/grpc/health/v1/health.proto', import.meta.url));
const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };

/** A logger that keeps its lines. */
function recordingLogger(): Logger & { lines: Array<{ level: string; msg: string } & Record<string, unknown>> } {
  const lines: Array<{ level: string; msg: string } & Record<string, unknown>> = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, ...fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Polls `check` every 50 ms; fails naming `what` after `timeoutMs`. */
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the PostgreSQL store: errors logged, a lost database in the health service, claims kept while turns run', requirePostgres('the PostgreSQL store health suite'), () => {
  let cluster: PostgresCluster;
  let databases = 0;
  const cleanups: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    cluster = await startPostgresCluster();
  }, 90_000);
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });
  afterAll(() => cluster?.stop(), 60_000);
  const open = async (options: { logger?: Logger; claimExpirySeconds?: number } = {}): Promise<{ store: ControlPlaneStore; url: string }> => {
    const url = await cluster.createDatabase(`health_${process.pid}_${++databases}`);
    const store = await openPostgresStore({ url, maxConnections: 4, healthIntervalMs: 200, ...options });
    cleanups.push(() => store.close());
    return { store, url };
  };

  it('keeps a task turn its claim past the claim expiry while its runner lives: another runner never takes it over', async () => {
    const { store, url } = await open();
    const other = await openPostgresStore({ url, maxConnections: 4 });
    cleanups.push(() => other.close());
    const opened: string[] = [];
    // A task turn that never opens: it runs until its runner stops it.
    const openTaskTurn = (name: string): OpenTaskTurn => ({ signal }) => {
      opened.push(name);
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    };
    const model = createOpenAIResponsesModel({ model: 'unused', apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1', stream: true, maxRetries: 0 });
    const first = new WorkflowRunner({ store, model, openTaskTurn: openTaskTurn('first'), leaseMs: 2_000, pollMs: 100, logger: silentLogger });
    cleanups.push(() => first.close());
    const { runId } = await store.workflows.createRun({ agentId: 'agent-1', maxRunningPerAgent: 5, definition: { name: 'slow', maxParallel: 1, tasks: [{ id: 'a', prompt: 'p', resultSchema: schema, dependsOn: [], maxAttempts: 1 }] } });
    first.serveAgents(['agent-1']);
    await until(() => opened.length === 1, 'the first turn');
    const second = new WorkflowRunner({ store: other, model, openTaskTurn: openTaskTurn('second'), leaseMs: 2_000, pollMs: 100, logger: silentLogger });
    cleanups.push(() => second.close());
    second.serveAgents(['agent-1']);
    // Three leases long: a claim that expired whatever its runner did would have been taken over by now.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(opened).toEqual(['first']);
    expect((await store.workflows.listAttempts(runId)).map((a) => [a.attempt, a.outcome ?? 'open'])).toEqual([[1, 'open']]);
    // The first runner stops: its attempt is handed back uncounted, and the second runs it.
    await first.close();
    await until(() => opened.length === 2, 'the second runner to take the task');
    expect(opened).toEqual(['first', 'second']);
  });

  it("logs the pool's connection errors as structured lines", async () => {
    const logger = recordingLogger();
    const { url } = await open({ logger });
    // Every connection of the store (its pool's idle ones) is cut, as by a database failover.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    cleanups.push(() => admin.end());
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    await until(() => logger.lines.some((line) => line.msg === 'PostgreSQL connection error'), 'a logged connection error');
    const line = logger.lines.find((one) => one.msg === 'PostgreSQL connection error')!;
    expect(line).toMatchObject({ level: 'error', source: 'pool', store: expect.stringContaining('127.0.0.1'), error: expect.stringMatching(/terminat/i) });
  });

  it('a lost database turns the health service NOT_SERVING and is logged', async () => {
    const logger = recordingLogger();
    const { store } = await open({ logger });
    const server = createControlPlaneServer({ answer: async () => ({ reply: undefined }), token: 'health-token', logger: silentLogger, watchStoreHealth: store.watchHealth!.bind(store) });
    cleanups.push(() => server.close({ graceMs: 0 }));
    const address = await server.listen('127.0.0.1:0');
    const definition = grpc.loadPackageDefinition(protoLoader.loadSync(healthProto, { keepCase: true, enums: String, defaults: true }));
    const Health = (definition as unknown as { grpc: { health: { v1: { Health: new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client & { check: (request: object, metadata: grpc.Metadata, callback: (error: Error | null, reply: { status: string }) => void) => void } } } } }).grpc.health.v1.Health;
    const client = new Health(address, grpc.credentials.createInsecure());
    cleanups.push(async () => client.close());
    // Health needs the token like every RPC (the probe sends it: deploy/grpc-health-probe.mjs).
    const metadata = new grpc.Metadata();
    metadata.set('authorization', 'Bearer health-token');
    const status = () => new Promise<string>((resolve, reject) => client.check({ service: '' }, metadata, (error, reply) => (error ? reject(error) : resolve(reply.status))));
    expect(await status()).toBe('SERVING');
    await cluster.stop();
    await until(async () => (await status()) === 'NOT_SERVING', 'health NOT_SERVING after the database stopped');
    expect(logger.lines.find((line) => line.msg === 'PostgreSQL database lost')).toMatchObject({ level: 'error', error: expect.stringMatching(/is unreachable/) });
  });
});
