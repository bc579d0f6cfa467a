/**
 * The fleet simulation: `controllers` real `serve` processes sharing one throwaway PostgreSQL,
 * `agents` agent ids spread over `sidecars` real sidecar processes, each agent given a background
 * job, some a one-off schedule and some a two-task workflow, all played by each controller's own
 * embedded model. With `chaos`, once a third of the work is done one controller is SIGKILLed and
 * another SIGTERMed and started again. The report is read from the database afterwards.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import pg from 'pg';
import { controlPlaneClient } from '../../test/fixtures/control-plane-client.js';
import { startPostgresCluster, type PostgresCluster } from '../../test/fixtures/postgres-cluster.js';
import { startServe as startServeProcess } from '../../test/fixtures/start-serve.js';
import { startSidecar, type StartedSidecar } from '../../test/fixtures/start-sidecar.js';

/** What to simulate. */
export interface FleetOptions {
  controllers: number;
  agents: number;
  sidecars: number;
  /** Every n-th agent also gets a one-off schedule (0: none). */
  scheduleEvery: number;
  /** Every n-th agent also gets a two-task workflow (0: none). */
  workflowEvery: number;
  chaos: boolean;
  /** The bound on the whole run (default 10 min). */
  timeoutMs?: number;
  /** Reuse a cluster (the bench runs several fleets on one). */
  cluster?: PostgresCluster;
  log?: (line: string) => void;
}

/** What the database says once the work is done. */
export interface FleetReport {
  controllers: number;
  agents: number;
  wallMs: number;
  /** Job turns (schedule firings included) and workflow task attempts that committed. */
  taskTurns: number;
  turnsPerSecond: number;
  workflows: { total: number; succeeded: number };
  jobs: { total: number; succeeded: number; lost: number; ranMoreThanOnce: number };
  schedules: { total: number; fired: number; firedTwice: number };
  tasksCommittedTwice: number;
  /** Jobs finished per controller (by its runner id's pid), in start order; restarted ones count separately. */
  spread: Record<string, number>;
  /** Workflow tasks committed per controller (the controller whose attempt committed it). */
  taskSpread: Record<string, number>;
  /** Task attempts logged interrupted (their controller died or stopped) and run again elsewhere. */
  tasksRunAgain: number;
  killed?: string;
  restarted?: string;
}

const sampleWorkspace = join(import.meta.dirname, '..', '..', 'controller', 'sample-workspace');
const schema = JSON.stringify({ type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'] });

/**
 * Runs one fleet to completion and reports it. Every process it starts is stopped before it returns.
 *
 * @throws Error when the work does not finish within `timeoutMs` (with the counts so far).
 */
export async function runFleet(options: FleetOptions): Promise<FleetReport> {
  const log = options.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'fleet-'));
  const ownCluster = options.cluster ? undefined : await startPostgresCluster();
  const cluster = options.cluster ?? ownCluster!;
  const sidecars: StartedSidecar[] = [];
  const serves: Array<StartedSidecar | undefined> = [];
  let db: pg.Client | undefined;
  try {
    const url = await cluster.createDatabase(`fleet_${process.pid}_${Date.now() % 1_000_000}_${options.controllers}`);
    for (let i = 0; i < options.sidecars; i++) {
      const workspace = join(dir, `workspace-${i}`);
      cpSync(sampleWorkspace, workspace, { recursive: true });
      sidecars.push(await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(dir, `state-${i}`)], timeoutMs: 60_000 }));
    }
    const agentIds = Array.from({ length: options.agents }, (_, i) => `agent-${String(i).padStart(4, '0')}`);
    const agentsFile = join(dir, 'agents.json');
    writeFileSync(agentsFile, JSON.stringify(Object.fromEntries(agentIds.map((id, i) => [id, { address: sidecars[i % sidecars.length]!.address }]))));
    // One token for the fleet's controllers, as a deployment shares one (deploy/secrets.example.yaml).
    const token = 'fleet-controller-token';
    const tokenFile = join(dir, 'controller.token');
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    // node --import tsx, not the tsx CLI: the CLI waits 30 ms for its child to acknowledge a relayed
    // SIGTERM, then SIGKILLs it and exits 143 itself; a controller busy with turns misses that, so
    // the restart below measured tsx, not the drain (which exits 0).
    const startServe = () =>
      startServeProcess({
        args: ['--listen', '127.0.0.1:0', '--token-file', tokenFile, '--database', url, '--agents', agentsFile, '--claim-expiry-s', '8', '--grace-ms', '3000', '--approve', 'never', '--embedded'],
        env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '', DATABASE_URL: '' },
        timeoutMs: 90_000,
      });
    // One at a time: the store migrates once, the others find it done.
    for (let i = 0; i < options.controllers; i++) serves.push(await startServe());
    /** Every controller process ever started, by its pid (and any under it): a runner id is host:pid:random. */
    const labelled: Array<{ label: string; pids: number[] }> = serves.map((serve, i) => ({ label: `controller ${i}`, pids: processTree(serve!.child.pid!) }));
    log(`fleet: ${options.controllers} controllers, ${options.agents} agents over ${options.sidecars} sidecars`);

    db = new pg.Client({ connectionString: url });
    await db.connect();
    const started = performance.now();
    const clients = serves.map((serve) => controlPlaneClient(serve!.address, token));
    let expectedJobs = 0;
    let expectedSchedules = 0;
    let expectedWorkflows = 0;
    // At most SUBMITTING agents' calls in flight: ten thousand agents' calls at once queued inside
    // the client itself (name resolution, picking a connection) past their 20 s deadline.
    const SUBMITTING = 200;
    let nextAgent = 0;
    const submitOne = async (agentId: string, i: number) => {
      const via = clients[i % clients.length]!;
      // The schedule first, its time taken at the call and far enough ahead to outlast the burst of
      // submissions (a thousand agents at once take seconds), yet not so far that it bounds the run.
      if (options.scheduleEvery > 0 && i % options.scheduleEvery === 0) {
        const leadMs = Math.max(10_000, options.agents * 20);
        await via.createSchedule({ agentId, prompt: `fleet schedule of ${agentId}`, at: new Date(Date.now() + leadMs).toISOString() });
        expectedSchedules++;
      }
      await via.startJob({ agentId, prompt: `fleet job of ${agentId}` });
      expectedJobs++;
      if (options.workflowEvery > 0 && i % options.workflowEvery === 0) {
        await via.startWorkflow({
          agentId,
          definition: {
            name: `fleet workflow of ${agentId}`,
            maxParallel: 2,
            tasks: [
              { id: 'first', prompt: 'Summarise the project in one line.', resultSchemaJson: schema, dependsOn: [], maxAttempts: 3 },
              { id: 'second', prompt: 'Summarise the first summary.', resultSchemaJson: schema, dependsOn: ['first'], maxAttempts: 3 },
            ],
          },
        });
        expectedWorkflows++;
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(SUBMITTING, agentIds.length) }, async () => {
        while (nextAgent < agentIds.length) {
          const i = nextAgent++;
          await submitOne(agentIds[i]!, i);
        }
      }),
    );
    for (const c of clients) c.close();
    log(`fleet: submitted ${expectedJobs} jobs, ${expectedSchedules} schedules, ${expectedWorkflows} workflows in ${Math.round(performance.now() - started)} ms`);

    const expectedTurns = expectedJobs + expectedSchedules + expectedWorkflows * 2;
    const doneTurns = async () => {
      const { rows } = await db!.query<{ jobs: string; tasks: string; running: string }>(
        `SELECT (SELECT count(*) FROM jobs WHERE status IN ('succeeded', 'failed', 'cancelled')) AS jobs,
                (SELECT count(*) FROM workflow_results) AS tasks,
                (SELECT count(*) FROM workflow_runs WHERE state = 'running') AS running`,
      );
      return { turns: Number(rows[0]!.jobs) + Number(rows[0]!.tasks), runningRuns: Number(rows[0]!.running) };
    };
    let killed: string | undefined;
    let restarted: string | undefined;
    const deadline = Date.now() + (options.timeoutMs ?? 600_000);
    for (;;) {
      const progress = await doneTurns();
      if (progress.turns >= expectedTurns && progress.runningRuns === 0) break;
      if (Date.now() > deadline) throw new Error(`the fleet did not finish in time: ${progress.turns} of ${expectedTurns} turns, ${progress.runningRuns} runs still running`);
      if (options.chaos && killed === undefined && serves.length >= 3 && progress.turns >= expectedTurns / 3) {
        killed = `controller 0 SIGKILLed at ${progress.turns}/${expectedTurns} turns`;
        log(`fleet: ${killed}`);
        await serves[0]!.stop('SIGKILL');
        serves[0] = undefined;
        const code = await serves[1]!.stop('SIGTERM');
        serves[1] = await startServe();
        labelled.push({ label: 'controller 1 (restarted)', pids: processTree(serves[1].child.pid!) });
        restarted = `controller 1 SIGTERMed (exit ${code}) and started again`;
        log(`fleet: ${restarted}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const wallMs = performance.now() - started;

    const one = async (text: string) => Number((await db!.query<{ n: string }>(text)).rows[0]!.n);
    /** Counts per controller, from rows of (owner, n): an owner id is `host:pid:random`. */
    const byController = async (text: string) => {
      const spread: Record<string, number> = {};
      for (const row of (await db!.query<{ owner: string; n: string }>(text)).rows) {
        const pid = Number(row.owner?.split(':').at(-2));
        const label = labelled.find((entry) => entry.pids.includes(pid))?.label ?? `runner ${row.owner}`;
        spread[label] = (spread[label] ?? 0) + Number(row.n);
      }
      return spread;
    };
    const spread = await byController(`SELECT owner, count(*) AS n FROM jobs WHERE status = 'succeeded' GROUP BY owner`);
    // Which controller's attempt committed each workflow task.
    const taskSpread = await byController(`SELECT owner, count(*) AS n FROM workflow_attempts WHERE outcome = 'committed' GROUP BY owner`);
    const report: FleetReport = {
      controllers: options.controllers,
      agents: options.agents,
      wallMs,
      taskTurns: expectedTurns,
      turnsPerSecond: expectedTurns / (wallMs / 1000),
      workflows: { total: await one('SELECT count(*) AS n FROM workflow_runs'), succeeded: await one("SELECT count(*) AS n FROM workflow_runs WHERE state = 'succeeded'") },
      jobs: {
        total: await one('SELECT count(*) AS n FROM jobs'),
        succeeded: await one("SELECT count(*) AS n FROM jobs WHERE status = 'succeeded'"),
        lost: expectedJobs + expectedSchedules - (await one("SELECT count(*) AS n FROM jobs WHERE status = 'succeeded'")),
        ranMoreThanOnce: await one('SELECT count(*) AS n FROM jobs WHERE attempts > 1'),
      },
      schedules: {
        total: await one('SELECT count(*) AS n FROM schedules'),
        fired: await one('SELECT count(DISTINCT schedule_id) AS n FROM schedule_firings'),
        firedTwice: await one('SELECT count(*) AS n FROM (SELECT schedule_id FROM jobs WHERE schedule_id IS NOT NULL GROUP BY schedule_id HAVING count(*) > 1) AS twice'),
      },
      tasksCommittedTwice: await one(
        "SELECT count(*) AS n FROM (SELECT run_id, task_id FROM workflow_attempts WHERE outcome = 'committed' GROUP BY run_id, task_id HAVING count(*) > 1) AS twice",
      ),
      spread,
      taskSpread,
      tasksRunAgain: await one("SELECT count(*) AS n FROM workflow_attempts WHERE outcome = 'interrupted'"),
      ...(killed ? { killed } : {}),
      ...(restarted ? { restarted } : {}),
    };
    return report;
  } finally {
    await db?.end().catch(() => undefined);
    for (const serve of serves) await serve?.stop('SIGKILL');
    for (const sidecar of sidecars) await sidecar.stop('SIGKILL');
    await ownCluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A process and its descendants' pids (ps, Linux). */
function processTree(pid: number): number[] {
  const all = [pid];
  for (let i = 0; i < all.length; i++) {
    try {
      const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(all[i])], { encoding: 'utf8' });
      all.push(...children.split('\n').map((line) => Number(line.trim())).filter((n) => n > 0));
    } catch {
      // no children
    }
  }
  return all;
}
