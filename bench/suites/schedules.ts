// The `schedules` suite: how late the scheduler fires one-off schedules, from the time each was
// due to the moment its firing is claimed in the store (one SQLite transaction: the firing row, the
// schedule advanced, its job queued) and handed on. The reference is a plain setTimeout aimed at
// the same due times in the same run: the event loop's own lateness on this machine.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { answerControlRequest } from '../../controller/control-plane/grpc/answer-control-request.js';
import { Scheduler } from '../../controller/control-plane/domain/schedules/scheduler.js';
import { openSqliteStore } from '../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import { quantile, type BenchRow, type BenchSuite } from '../bench-row.js';

const COUNT = 300;
const SPREAD_MS = 3_000;
const LEAD_MS = 1_000;

/** Wall-clock time with sub-millisecond resolution. */
const now = () => performance.timeOrigin + performance.now();

/** Due times (whole ms, as the store keeps them) spread over SPREAD_MS, starting LEAD_MS from now. */
function dueTimes(): number[] {
  const start = Math.ceil(Date.now() + LEAD_MS);
  return Array.from({ length: COUNT }, (_, index) => start + Math.floor((index * SPREAD_MS) / COUNT));
}

async function setTimeoutLateness(): Promise<number[]> {
  const lateness: number[] = [];
  await Promise.all(
    dueTimes().map(
      (due) =>
        new Promise<void>((resolve) => {
          setTimeout(() => {
            lateness.push(now() - due);
            resolve();
          }, due - Date.now());
        }),
    ),
  );
  return lateness;
}

async function schedulerLateness(): Promise<number[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-schedules-'));
  const store = await openSqliteStore({ dataDir });
  const hooks = { schedulesAndJobs: { limits: { maxSchedulesPerAgent: COUNT } } };
  try {
    for (const due of dueTimes()) {
      const reply = await answerControlRequest({
        store,
        agentId: 'bench-agent',
        request: { request: { $case: 'createSchedule', value: { agentId: '', prompt: 'tick', cron: '', at: new Date(due).toISOString(), timeZone: 'UTC' } } },
        hooks,
      });
      if (reply.reply?.$case !== 'createSchedule') throw new Error(`could not create a schedule: ${JSON.stringify(reply.reply)}`);
    }
    const lateness: number[] = [];
    let resolveAll: () => void;
    const all = new Promise<void>((resolve) => (resolveAll = resolve));
    const scheduler = new Scheduler({
      schedules: store.schedules,
      maxActiveJobsPerAgent: COUNT,
      onFired: (firing) => {
        lateness.push(now() - firing.fireAt);
        if (lateness.length === COUNT) resolveAll();
      },
    });
    scheduler.start();
    const timer = setTimeout(() => resolveAll(), LEAD_MS + SPREAD_MS + 30_000);
    await all;
    clearTimeout(timer);
    await scheduler.close();
    if (lateness.length !== COUNT) throw new Error(`only ${lateness.length} of ${COUNT} schedules fired`);
    return lateness;
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export const run: BenchSuite = async () => {
  const reference = await setTimeoutLateness();
  const fired = await schedulerLateness();
  const rows: BenchRow[] = [];
  for (const [label, q] of [['p50', 0.5], ['p99', 0.99]] as const) {
    const value = quantile(fired, q);
    const base = quantile(reference, q);
    rows.push({
      suite: 'schedules',
      name: `one-off schedule firing lateness ${label} (${COUNT} over ${SPREAD_MS / 1000} s)`,
      value,
      unit: `ms ${label}`,
      reference: `setTimeout lateness ${label} = ${base.toFixed(2)} ms`,
      ...(base > 0 ? { ratio: value / base } : {}),
      note: 'due time → firing claimed in SQLite and handed on; reference: setTimeout aimed at the same due times',
    });
  }
  return rows;
};
