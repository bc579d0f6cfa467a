// The turn journal (docs/reliability.md): what a journaled turn stores against the sum of its items,
// and what journaling costs per model call and per tool call against the same turn unjournaled, in
// the same run. The turn is runTurn's, on an in-process model and tool turn that answer at once, so
// the difference is the journal's alone: SQLite always, PostgreSQL where Debian's postgresql is
// installed (a throwaway cluster).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ControlPlaneStore } from '../../controller/control-plane/domain/control-plane-store.js';
import { openStoreTurnJournal } from '../../controller/control-plane/domain/turns/store-turn-journal.js';
import { openPostgresStore } from '../../controller/control-plane/store/postgres/open-postgres-store.js';
import { openSqliteStore } from '../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import { runTurn } from '../../controller/loop/run-turn.js';
import type { ResponseItem, ResponsesModel } from '../../controller/model/responses-model.js';
import { functionCallItem, messageItem } from '../../controller/model/responses-wire.js';
import { CallState } from '../../controller/sidecar-client/call-state.js';
import type { ToolTurn } from '../../controller/sidecar-client/sidecar-types.js';
import { postgresUnavailableReason, startPostgresCluster } from '../../test/fixtures/postgres-cluster.js';
import { quantile, type BenchRow } from '../bench-row.js';

/** Tool output per call: a 100-call turn carries 1 MB of it. */
const OUTPUT_BYTES = 10_000;

/** A model that calls `read` once per response until `calls` calls were made, then answers. */
function model(calls: number): ResponsesModel & { inputBytes: number } {
  let made = 0;
  // The input only grows by appending: its size is kept up to date item by item (stringifying the
  // whole input per request was most of the turn's time, and noise in the cost row).
  let counted = 0;
  let total = 0;
  const self = {
    description: 'bench',
    inputBytes: 0,
    async create(request: { input: ResponseItem[] }) {
      for (; counted < request.input.length; counted++) total += Buffer.byteLength(JSON.stringify(request.input[counted]));
      // What a journal of whole requests would store: each request's input again.
      self.inputBytes += total;
      if (made >= calls) return { id: `resp_${made}`, output: [messageItem('done')] };
      made++;
      return { id: `resp_${made}`, output: [functionCallItem({ callId: `c${made}`, name: 'read', arguments: `{"key":"file-${made}"}` })] };
    },
  };
  return self;
}

function turn(): ToolTurn {
  return {
    tools: [{ name: 'read', description: 'Reads.', parametersJson: '{"type":"object"}', parameters: { type: 'object' }, strict: false, deferLoading: false, executionMode: 'parallel', readOnly: true, destructive: false }],
    instructions: '',
    failure: undefined,
    call(request) {
      const state = new CallState(request.callId);
      // Distinct content per call (no two outputs alike), so the store's dedup does not flatter it.
      const text = `${request.callId}:`.padEnd(OUTPUT_BYTES, String.fromCharCode(97 + (request.callId.length % 26)));
      setImmediate(() => state.finish({ callId: request.callId, content: [{ type: 'text', text }], completedLabel: '', terminateTurn: false, repairs: [], durationMs: 0 }));
      return state;
    },
  };
}

async function timedTurn(calls: number, store: ControlPlaneStore | undefined, id: string): Promise<{ ms: number; inputBytes: number }> {
  const journal = store ? await openStoreTurnJournal(store.turns, { journalId: id, kind: 'job', agentId: 'bench', title: 'bench' }) : undefined;
  const fake = model(calls);
  const started = performance.now();
  const outcome = await runTurn({ model: fake, turn: turn(), prompt: 'go', maxModelCalls: calls + 2, ...(journal ? { journal } : {}) });
  const ms = performance.now() - started;
  if (outcome.status !== 'completed') throw new Error(`the bench turn ended ${outcome.status}: ${outcome.error ?? ''}`);
  return { ms, inputBytes: fake.inputBytes };
}

async function rowsFor(database: string, store: ControlPlaneStore): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const calls of [10, 100, 1_000]) {
    const { inputBytes } = await timedTurn(calls, store, `size-${calls}`);
    const size = await store.turns.size(`size-${calls}`);
    const stored = size.entryBytes + size.itemBytes;
    rows.push({
      suite: 'journal',
      name: `${database}: bytes stored, ${calls}-call turn`,
      value: stored / 1024,
      unit: 'KiB',
      reference: `sum of its items ${(size.itemBytes / 1024).toFixed(0)} KiB`,
      ratio: stored / size.itemBytes,
      note: `storing each request's input instead: ${(inputBytes / 1024 / 1024).toFixed(1)} MiB`,
    });
  }
  // Cost: the same 100-call turn with and without the journal, alternated, 7 times each.
  const on: number[] = [];
  const off: number[] = [];
  for (let round = 0; round < 7; round++) {
    off.push((await timedTurn(100, undefined, '')).ms);
    on.push((await timedTurn(100, store, `cost-${round}`)).ms);
  }
  // 101 model calls and 100 tool calls: each journals one or two entries.
  const perStep = (quantile(on, 0.5) - quantile(off, 0.5)) / 201;
  rows.push({
    suite: 'journal',
    name: `${database}: journaling cost per model or tool call`,
    value: perStep * 1000,
    unit: 'µs',
    reference: `100-call turn p50 ${quantile(off, 0.5).toFixed(1)} ms unjournaled, ${quantile(on, 0.5).toFixed(1)} ms journaled`,
    note: 'goal ≤ 1,000 µs on SQLite, a few ms on PostgreSQL',
  });
  return rows;
}

/** The rows: size against items at 10/100/1,000 calls, and cost per call against journaling off, per database. */
export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'bench-journal-'));
  try {
    const sqlite = await openSqliteStore({ dataDir: scratch });
    try {
      rows.push(...(await rowsFor('SQLite', sqlite)));
    } finally {
      await sqlite.close();
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const unavailable = postgresUnavailableReason();
  if (unavailable) {
    process.stderr.write(`bench journal: PostgreSQL rows skipped: ${unavailable}\n`);
    return rows;
  }
  const cluster = await startPostgresCluster();
  try {
    const store = await openPostgresStore({ url: await cluster.createDatabase('bench_journal'), maxConnections: 4 });
    try {
      rows.push(...(await rowsFor('PostgreSQL', store)));
    } finally {
      await store.close();
    }
  } finally {
    await cluster.stop();
  }
  return rows;
}
