// `npm run bench -- fleet`: the fleet simulation (bench/fleet/run-fleet.ts). Throughput with 1, 2
// and 3 controllers on the same work, each against the 1-controller run of this same bench, then
// one run with chaos (a controller SIGKILLed, another SIGTERMed and restarted) whose correctness
// counts are rows too; what an idle fleet costs its database at 100, 1,000 and 10,000 agents
// (bench/fleet/idle-cost.ts); claim fairness and a new agent's first job (bench/fleet/claim-fairness.ts).
// Minutes long, so it runs only when asked for by name. FLEET_PARTS=throughput,chaos,idle,fairness
// picks parts; FLEET_IDLE_AGENTS=100,1000,10000 the idle sizes.
import type { BenchRow } from '../bench-row.js';
import { measureClaimFairness } from '../fleet/claim-fairness.js';
import { measureIdleCost } from '../fleet/idle-cost.js';
import { runFleet, type FleetReport } from '../fleet/run-fleet.js';
import { postgresUnavailableReason, startPostgresCluster } from '../../test/fixtures/postgres-cluster.js';

const suite = 'fleet';

export async function run(): Promise<BenchRow[]> {
  if (!process.argv.slice(2).includes('fleet')) {
    return [{ suite, name: 'fleet simulation', value: Number.NaN, unit: '', note: 'minutes long: run it with npm run bench -- fleet' }];
  }
  const unavailable = postgresUnavailableReason();
  if (unavailable) return [{ suite, name: 'fleet simulation', value: Number.NaN, unit: '', note: `skipped: ${unavailable}` }];
  const throughputAgents = Number(process.env.FLEET_THROUGHPUT_AGENTS ?? 120);
  // 120 agent ids over the sidecars below, every controller running every agent: with per-agent
  // pg-boss queues the 1,000-agent run no longer completes (docs/benchmarks.md); FLEET_AGENTS=1000 tries it.
  const chaosAgents = Number(process.env.FLEET_AGENTS ?? 120);
  const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
  const parts = new Set((process.env.FLEET_PARTS ?? 'throughput,chaos,idle,fairness').split(','));
  const cluster = await startPostgresCluster();
  try {
    const rows: BenchRow[] = [];
    const shape = { sidecars: 3, scheduleEvery: 4, workflowEvery: 5, cluster, log };
    if (parts.has('fairness')) {
      const fair = await measureClaimFairness(cluster);
      rows.push(
        { suite, name: 'lone job wait, no flood', value: fair.alone.waitMs, unit: 'ms', note: `${fair.alone.claimsBefore} claims before it` },
        {
          suite,
          name: `lone job wait behind another agent's ${fair.flood} queued jobs`,
          value: fair.flooded.waitMs,
          unit: 'ms',
          reference: 'no flood',
          ratio: fair.flooded.waitMs / fair.alone.waitMs,
          note: `${fair.flooded.claimsBefore} claims before it (the flooding agent's running limit, 2): one claim round`,
        },
        { suite, name: "a new agent's first job, insert + claim p50", value: fair.firstJobMs, unit: 'ms', reference: 'a job of an agent with 1,000 jobs', ratio: fair.firstJobMs / fair.repeatJobMs, note: 'nothing is created per agent' },
      );
    }
    if (parts.has('idle')) {
      for (const agents of (process.env.FLEET_IDLE_AGENTS ?? '100,1000,10000').split(',').map(Number)) {
        const cost = await measureIdleCost({ cluster, agents, worked: Math.min(agents, 300), log });
        rows.push(
          { suite, name: `idle fleet, 2 controllers, ${agents} agents`, value: cost.idleTps, unit: 'transactions/s', note: `${Math.round(cost.idleTuplesPerSecond)} tuples read/s` },
          { suite, name: `busy fleet, ${cost.worked} jobs of as many agents, 2 controllers, ${agents} agents`, value: cost.busyTransactionsPerJob, unit: 'transactions/job', note: 'from the first StartJob to the last job recorded, polls included' },
          { suite, name: `idle fleet after ${cost.worked} agents had a job, 2 controllers, ${agents} agents`, value: cost.afterWorkTps, unit: 'transactions/s', note: `${Math.round(cost.afterWorkTuplesPerSecond)} tuples read/s` },
        );
      }
    }
    let single: FleetReport | undefined;
    for (const controllers of parts.has('throughput') ? [1, 2, 3] : []) {
      const report = await runFleet({ ...shape, controllers, agents: throughputAgents, chaos: false });
      single ??= report;
      rows.push({
        suite,
        name: `task turns/s, ${controllers} controller${controllers > 1 ? 's' : ''} (${throughputAgents} agents)`,
        value: report.turnsPerSecond,
        unit: 'turns/s',
        ...(controllers > 1 ? { reference: '1 controller, same work', ratio: report.turnsPerSecond / single!.turnsPerSecond } : {}),
        note: `${report.taskTurns} turns in ${(report.wallMs / 1000).toFixed(1)} s; jobs ${JSON.stringify(report.spread)}; tasks ${JSON.stringify(report.taskSpread)}`,
      });
    }
    if (!parts.has('chaos')) return rows;
    const chaos = await runFleet({ ...shape, controllers: 3, agents: chaosAgents, chaos: true, timeoutMs: Math.max(1_200_000, chaosAgents * 600) });
    const count = (name: string, value: number, note = '') => rows.push({ suite, name: `chaos (${chaosAgents} agents, 3 controllers): ${name}`, value, unit: 'count', note });
    count('workflows finished', chaos.workflows.succeeded, `of ${chaos.workflows.total}`);
    count('tasks committed twice', chaos.tasksCommittedTwice);
    count('schedules fired twice', chaos.schedules.firedTwice, `${chaos.schedules.fired} of ${chaos.schedules.total} fired`);
    count('jobs lost', chaos.jobs.lost, `${chaos.jobs.succeeded} of ${chaos.jobs.total} succeeded`);
    count('jobs run again', chaos.jobs.ranMoreThanOnce, 'at-least-once: turns their controller died or stopped in, claimed again');
    count('task attempts run again', chaos.tasksRunAgain, 'attempts a dying or stopping controller held, logged interrupted and claimed again');
    rows.push({
      suite,
      name: `chaos (${chaosAgents} agents, 3 controllers): task turns/s`,
      value: chaos.turnsPerSecond,
      unit: 'turns/s',
      note: `${chaos.killed}; ${chaos.restarted}; jobs ${JSON.stringify(chaos.spread)}; tasks ${JSON.stringify(chaos.taskSpread)}`,
    });
    return rows;
  } finally {
    await cluster.stop();
  }
}
