// `npm run bench -- fleet`: the fleet simulation (bench/fleet/run-fleet.ts). Throughput with 1, 2
// and 3 controllers on the same work, each against the 1-controller run of this same bench, then
// one run with chaos (a controller SIGKILLed, another SIGTERMed and restarted) whose correctness
// counts are rows too. Minutes long, so it runs only when asked for by name.
import type { BenchRow } from '../bench-row.js';
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
  const cluster = await startPostgresCluster();
  try {
    const rows: BenchRow[] = [];
    const shape = { sidecars: 3, scheduleEvery: 4, workflowEvery: 5, cluster, log };
    let single: FleetReport | undefined;
    for (const controllers of [1, 2, 3]) {
      const report = await runFleet({ ...shape, controllers, agents: throughputAgents, chaos: false });
      single ??= report;
      rows.push({
        suite,
        name: `task turns/s, ${controllers} controller${controllers > 1 ? 's' : ''} (${throughputAgents} agents)`,
        value: report.turnsPerSecond,
        unit: 'turns/s',
        ...(controllers > 1 ? { reference: '1 controller, same work', ratio: report.turnsPerSecond / single.turnsPerSecond } : {}),
        note: `${report.taskTurns} turns in ${(report.wallMs / 1000).toFixed(1)} s; jobs ${JSON.stringify(report.spread)}; tasks ${JSON.stringify(report.taskSpread)}`,
      });
    }
    const chaos = await runFleet({ ...shape, controllers: 3, agents: chaosAgents, chaos: true, timeoutMs: 1_200_000 });
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
