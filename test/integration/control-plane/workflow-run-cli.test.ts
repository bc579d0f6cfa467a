import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import type { ResponseItem } from '../../../controller/model/responses-model.js';
import { functionCallItem } from '../../../controller/model/responses-wire.js';
import { startScriptedResponsesServer, type ScriptStep } from '../../fakes/scripted-responses-server.js';
import { until } from '../../fixtures/control-plane-client.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requirePostgres, startPostgresCluster } from '../../fixtures/postgres-cluster.js';
import { openPostgresStore } from '../../../controller/control-plane/store/postgres/open-postgres-store.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'workflow-cli-'));
let sidecar: StartedSidecar;

beforeAll(async () => {
  mkdirSync(join(scratch, 'workspace'));
  sidecar = await startSidecar({ entry: 'test/fixtures/workflow-fixture-sidecar.ts', args: ['--listen', '127.0.0.1:0', '--workspace', join(scratch, 'workspace'), '--state-dir', join(scratch, 'state')] });
});
afterAll(async () => {
  await sidecar?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** Starts `npm run controller -- ARGS` as its own process group (tsx and its node child). */
function controller(args: string[], extraEnv: NodeJS.ProcessEnv = {}) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  delete env.DATABASE_URL;
  Object.assign(env, extraEnv);
  const child = spawn(`${root}node_modules/.bin/tsx`, [`${root}controller/control-plane-main.ts`, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 60_000);
  void exited.then(() => clearTimeout(timer));
  return { child, exited, out: () => stdout, err: () => stderr, kill: () => process.kill(-child.pid!, 'SIGKILL') };
}

const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
const writeWorkflow = (name: string, body: unknown) => {
  const file = join(scratch, name);
  writeFileSync(file, typeof body === 'string' ? body : JSON.stringify(body));
  return file;
};
const promptOf = (body: Record<string, unknown>) => JSON.stringify((body.input as ResponseItem[])[0]);
const submit = (n: number) => ({ output: [functionCallItem({ callId: 'c1', name: 'submit_result', arguments: JSON.stringify({ result: { n } }) })] });

describe('npm run controller -- workflow run', () => {
  it('runs a good file on the embedded model and prints each committed result as a JSON line', async () => {
    const file = writeWorkflow('good.json', {
      name: 'good',
      tasks: [
        { id: 'a', prompt: 'first', result_schema: schema },
        { id: 'b', prompt: 'second', result_schema: { type: 'object', properties: { label: { type: 'string', minLength: 2 } }, required: ['label'] }, depends_on: ['a'] },
      ],
    });
    const run = controller(['workflow', 'run', file, '--data-dir', join(scratch, 'data-good'), '--sidecar', sidecar.address, '--embedded']);
    expect(await run.exited, run.err()).toBe(0);
    const lines = run.out().trim().split('\n').map((line) => JSON.parse(line) as { task: string; result: Record<string, unknown> });
    expect(lines.map((line) => line.task)).toEqual(['a', 'b']);
    expect(typeof lines[0]!.result.n).toBe('number');
    expect(String(lines[1]!.result.label).length).toBeGreaterThanOrEqual(2);

    // The operator's view of the same store.
    const list = controller(['workflow', 'list', '--data-dir', join(scratch, 'data-good')]);
    expect(await list.exited, list.err()).toBe(0);
    const listed = list.out().trim().split('\n').map((line) => JSON.parse(line) as { run_id: string; state: string; tasks: unknown[] });
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ name: 'good', agent_id: 'cli-agent', state: 'succeeded', tasks: [{ id: 'a', state: 'committed' }, { id: 'b', state: 'committed' }] });
    // A prefix of the id will do, as for approvals.
    const show = controller(['workflow', 'show', listed[0]!.run_id.slice(0, 8), '--data-dir', join(scratch, 'data-good')]);
    expect(await show.exited, show.err()).toBe(0);
    const shown = JSON.parse(show.out()) as { run_id: string; attempts: Array<{ task_id: string; attempt: number; outcome: string; owner: string; started_at: string }> };
    expect(shown.run_id).toBe(listed[0]!.run_id);
    // Each attempt names the runner that claimed it: this `workflow run` process (host:pid:id); snake_case as the rest.
    expect(shown.attempts.map((a) => [a.task_id, a.attempt, a.outcome])).toEqual([['a', 1, 'committed'], ['b', 1, 'committed']]);
    expect(typeof shown.attempts[0]!.started_at).toBe('string');
    expect(show.out()).not.toMatch(/"[a-z]+[A-Z]\w*":/);
    expect(new Set(shown.attempts.map((a) => a.owner)).size).toBe(1);
    expect(shown.attempts[0]!.owner).toMatch(new RegExp(`^${hostname()}:\\d+:\\w+$`));
    const cancel = controller(['workflow', 'cancel', listed[0]!.run_id, '--data-dir', join(scratch, 'data-good')]);
    expect(await cancel.exited).toBe(1);
    expect(cancel.err()).toMatch(/^error: invalid_request: workflow run "[0-9a-f-]+" already succeeded; only a running workflow can be cancelled\n$/);
    // Four controller processes one after another: under a full parallel run each start takes seconds.
  }, 120_000);

  it('refuses a bad file with one line and exit 2, without a stack trace', async () => {
    const file = writeWorkflow('bad.json', { name: 'bad', tasks: [{ id: 'a', prompt: 'p', result_schema: schema, depends_on: ['b'] }, { id: 'b', prompt: 'p', result_schema: schema, depends_on: ['a'] }] });
    const run = controller(['workflow', 'run', file, '--data-dir', join(scratch, 'data-bad'), '--sidecar', sidecar.address, '--embedded']);
    expect(await run.exited).toBe(2);
    expect(run.err()).toBe(`error: ${file}: invalid workflow: the dependencies form a cycle: a → b → a (each listed task depends on the next); remove one of these depends_on entries\n`);
    expect(run.out()).toBe('');
    const notJson = controller(['workflow', 'run', writeWorkflow('broken.json', '{"name": '), '--embedded']);
    expect(await notJson.exited).toBe(2);
    expect(notJson.err()).toMatch(/^error: .*broken\.json: the workflow file is not JSON: [^\n]*\n$/);
  });

  it('SIGKILLed mid-workflow, then resumed: the run finishes, nothing committed runs again or commits twice', async () => {
    const steps: ScriptStep[] = [
      (body) => (promptOf(body).includes('first') ? submit(11) : { status: 500, body: { error: { message: 'expected task a first' } } }),
      { hang: true },
      (body) => (promptOf(body).includes('second') ? submit(22) : { status: 500, body: { error: { message: 'task a ran again' } } }),
    ];
    const server = await startScriptedResponsesServer({ steps });
    const dataDir = join(scratch, 'data-kill');
    const file = writeWorkflow('kill.json', { name: 'kill', max_parallel: 1, tasks: [{ id: 'a', prompt: 'first', result_schema: schema }, { id: 'b', prompt: 'second', result_schema: schema, depends_on: ['a'] }] });
    const flags = ['--data-dir', dataDir, '--sidecar', sidecar.address, '--base-url', server.baseURL, '--model', 'scripted'];
    try {
      const first = controller(['workflow', 'run', file, ...flags]);
      await server.waitForRequests(2, AbortSignal.timeout(60_000));
      first.kill();
      expect(await first.exited).toBeNull();
      const runId = /run ([0-9a-f-]{36})/.exec(first.err())?.[1];
      expect(runId, first.err()).toBeDefined();

      const second = controller(['workflow', 'resume', runId!, ...flags]);
      expect(await second.exited, second.err()).toBe(0);
      expect(second.out().trim().split('\n').map((line) => JSON.parse(line) as unknown)).toEqual([
        { task: 'a', result: { n: 11 } },
        { task: 'b', result: { n: 22 } },
      ]);
      expect(server.requests).toHaveLength(3);
      const store = await openSqliteStore({ dataDir });
      try {
        const run = await store.workflows.getRun(runId!);
        expect(run?.tasks.map((task) => [task.taskId, task.state, task.attempts])).toEqual([['a', 'committed', 1], ['b', 'committed', 2]]);
        const attempts = await store.workflows.listAttempts(runId!);
        expect(attempts.map((a) => `${a.taskId}${a.attempt}:${a.outcome}`)).toEqual(['a1:committed', 'b1:interrupted', 'b2:committed']);
      } finally {
        await store.close();
      }
    } finally {
      await server.close();
    }
  });
});

describe('the operator\'s workflow commands on PostgreSQL', requirePostgres('the workflow admin commands on PostgreSQL'), () => {
  it('show and cancel a run in the store several controllers share, named by --database', async () => {
    const cluster = await startPostgresCluster();
    try {
      const url = await cluster.createDatabase('workflow_admin');
      const store = await openPostgresStore({ url });
      let runId: string;
      try {
        const schemaObject = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
        ({ runId } = await store.workflows.createRun({ agentId: 'pg-agent', maxRunningPerAgent: 5, definition: { name: 'pg', maxParallel: 1, tasks: [{ id: 'a', prompt: 'p', resultSchema: schemaObject, dependsOn: [], maxAttempts: 1 }] } }));
        await store.workflows.claimTask({ owner: 'far-host:7:abc', leaseMs: 60_000 });
      } finally {
        await store.close();
      }
      const show = controller(['workflow', 'show', runId, '--database', url]);
      expect(await show.exited, show.err()).toBe(0);
      expect(JSON.parse(show.out())).toMatchObject({ run_id: runId, state: 'running', tasks: [{ id: 'a', state: 'running' }], attempts: [{ task_id: 'a', attempt: 1, owner: 'far-host:7:abc' }] });
      const cancel = controller(['workflow', 'cancel', runId, '--database', url, '--reason', 'operator stop']);
      expect(await cancel.exited, cancel.err()).toBe(0);
      expect(JSON.parse(cancel.out())).toMatchObject({ state: 'cancelled', error: 'operator stop', tasks: [{ id: 'a', state: 'cancelled' }] });
      const refused = controller(['workflow', 'list', '--database', 'mysql://nope']);
      expect(await refused.exited).toBe(1);
      expect(refused.err()).toMatch(/--database must be a postgres:\/\/ or postgresql:\/\/ URL/);
    } finally {
      await cluster.stop();
    }
  }, 120_000);

  it('one rule for every command: DATABASE_URL selects PostgreSQL for workflow run, list and serve alike', async () => {
    const cluster = await startPostgresCluster();
    try {
      const url = await cluster.createDatabase('one_rule');
      const file = writeWorkflow('pg-run.json', { name: 'on-postgres', tasks: [{ id: 'a', prompt: 'first', result_schema: schema }] });
      // No --data-dir, no --database: DATABASE_URL alone, as an operator exports it.
      const run = controller(['workflow', 'run', file, '--sidecar', sidecar.address, '--embedded'], { DATABASE_URL: url });
      expect(await run.exited, run.err()).toBe(0);
      expect(run.err()).toMatch(/store postgres:\/\//);
      const list = controller(['workflow', 'list'], { DATABASE_URL: url });
      expect(await list.exited, list.err()).toBe(0);
      expect(list.out().trim().split('\n').map((line) => (JSON.parse(line) as { name: string; state: string })).map((r) => [r.name, r.state])).toEqual([['on-postgres', 'succeeded']]);
      // The flag wins over the variable, for workflow run too (it used to refuse --database).
      const flagged = controller(['workflow', 'run', file, '--sidecar', sidecar.address, '--embedded', '--database', url], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
      expect(await flagged.exited, flagged.err()).toBe(0);
      // serve's listening line names the store it uses, not a SQLite folder it does not.
      const agents = writeWorkflow('pg-agents.json', { 'agent-a': { address: sidecar.address } });
      const serve = controller(['serve', '--listen', '127.0.0.1:0', '--agents', agents, '--embedded'], { DATABASE_URL: url });
      try {
        const listening = await until(async () => serve.out(), (out) => out.includes('"listening"') || serve.child.exitCode !== null, 'the listening line');
        const line = JSON.parse(listening.split('\n').find((l) => l.includes('"listening"'))!) as Record<string, unknown>;
        expect(line.store).toMatch(/^postgres:\/\/.*one_rule/);
        expect(line).not.toHaveProperty('dataDir');
      } finally {
        serve.kill();
      }
    } finally {
      await cluster.stop();
    }
  }, 180_000);
});
