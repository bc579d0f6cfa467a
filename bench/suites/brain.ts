// Brain at scale, through a real sidecar child started with --brain over generated knowledge bases
// (BENCH_BRAIN_PAGES, default 1,000 and 10,000 pages of ~4 KB in 50 folders; add 50000 for the
// large row, which takes minutes on a shared 2-core machine). Per corpus: the background build as
// MB/s beside a bare FTS5 insert of the same text in the same run; recall and get_page over the
// Turn stream beside the same SQL run in-process on the same database; the slowest cheap call
// while the build runs and while pages change, beside the same calls idle; how long a changed page
// takes to become searchable; the sidecar's RSS beside a sidecar without --brain.
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import Database from 'better-sqlite3';
import { toFtsQuery } from '../../sidecar/categories/brain/fts-query.js';
import { ToolSidecarServiceClient } from '../../src/gen/toolruntime/v1/sidecar.js';
import { corpusWords, generateBrainCorpus, type BrainCorpus } from '../../test/fixtures/brain-corpus.js';
import { startSidecar, type StartedSidecar } from '../../test/fixtures/start-sidecar.js';
import { openTaskTurn } from '../../test/fixtures/task-turn.js';
import { quantile, type BenchRow } from '../bench-row.js';
import { localTokenOptions } from '../../test/integration/sidecar/turn-driver.js';

const QUERIES = 400;
const CHANGES = 15;
const CHURN_PAGES = 200;
const PAUSE_MS = 10;
const words = corpusWords();

/** The sidecar's own process (tsx's node child): the leaf under the spawned child. */
function rssMegabytes(pid: number): number {
  let current = pid;
  for (;;) {
    const children = readFileSync(`/proc/${current}/task/${current}/children`, 'utf8').trim();
    if (!children) break;
    current = Number(children.split(' ')[0]);
  }
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${current}/status`, 'utf8'));
  return Number(line?.[1] ?? Number.NaN) / 1024;
}

/** Inserts every page's text into a bare FTS5 table (same tokenizer), 4 MB per transaction: wall and CPU ms. */
async function bareInsert(corpus: BrainCorpus, dir: string): Promise<{ ms: number; cpuMs: number }> {
  const texts: string[] = [];
  for (let from = 0; from < corpus.ids.length; from += 256) {
    texts.push(...(await Promise.all(corpus.ids.slice(from, from + 256).map((id) => readFile(path.join(corpus.dir, id), 'utf8')))));
  }
  const db = new Database(path.join(dir, 'bare.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec("CREATE VIRTUAL TABLE bare USING fts5(content, tokenize = 'porter unicode61')");
  const insert = db.prepare('INSERT INTO bare (content) VALUES (?)');
  const cpuStarted = process.cpuUsage();
  const started = performance.now();
  let index = 0;
  while (index < texts.length) {
    db.transaction(() => {
      let bytes = 0;
      while (index < texts.length && bytes < 4 * 1024 * 1024) {
        bytes += texts[index]!.length;
        insert.run(texts[index++]);
      }
    })();
  }
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuStarted);
  db.close();
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** A query a person might type: two or three topical words (frequency ranks 100 to 5,000). */
const query = (i: number) => [words[100 + ((i * 7_919) % 4_900)], words[100 + ((i * 104_729) % 4_900)], ...(i % 2 ? [words[100 + ((i * 31) % 1_000)]] : [])].join(' ');

async function waitForLog(sidecar: StartedSidecar, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(sidecar.stderr());
    if (match) return match;
    if (Date.now() > until) throw new Error(`no log line ${pattern} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Sequential calls until `stop()` says so, `pauseMs` apart (an agent's pace, not a loop that would
 * itself take a core from the build it is measuring beside); their durations in ms.
 */
async function callsUntil(call: () => Promise<unknown>, stop: () => boolean, min = 20, pauseMs = 0): Promise<number[]> {
  const samples: number[] = [];
  while (!stop() || samples.length < min) {
    const started = performance.now();
    await call();
    samples.push(performance.now() - started);
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  return samples;
}

async function benchCorpus(root: string, pages: number, baselineRss: number): Promise<BenchRow[]> {
  const label = `${pages.toLocaleString('en-US')} pages`;
  const dir = await mkdtemp(path.join(root, `brain-${pages}-`));
  const corpus = await generateBrainCorpus({ dir: path.join(dir, 'vault'), pages, folders: 50, pageBytes: 4_000 });
  const megabytes = corpus.bytes / 1e6;
  const bare = await bareInsert(corpus, dir);
  const bareMs = bare.ms;
  const sidecar = await startSidecar({ args: ['--workspace', dir, '--state-dir', path.join(dir, 'state'), '--brain', corpus.dir], timeoutMs: 60_000 });
  const client = new ToolSidecarServiceClient(sidecar.address, grpc.credentials.createInsecure(), localTokenOptions(sidecar.address));
  try {
    const turn = await openTaskTurn(client);
    // A rejected submit_result is the cheapest call a task turn has: it shows what the build costs
    // the calls that run beside it.
    const cheap = () => turn.call('submit_result', { result: { answer: 1 } }, 10_000);
    const buildLine = /"msg":"brain index built".*"buildMs":(\d+),"cpuMs":(\d+)/;
    const duringBuild = await callsUntil(cheap, () => buildLine.test(sidecar.stderr()), 20, PAUSE_MS);
    const built = await waitForLog(sidecar, buildLine, 30 * 60_000);
    const buildMs = Number(built[1]);
    const buildCpuMs = Number(built[2]);
    // The same calls idle, as many as ran beside the build: equally long windows of the shared
    // machine's noise, so their slowest calls compare.
    const idle = await callsUntil(cheap, () => true, Math.max(300, duringBuild.length), PAUSE_MS);

    let recallIndex = 0;
    let pageIndex = 0;
    const recall = await callsUntil(() => turn.call('recall', { query: query(recallIndex++) }, 10_000), () => recallIndex >= QUERIES);
    const getPage = await callsUntil(() => turn.call('get_page', { id: corpus.ids[(pageIndex++ * 7_919) % corpus.ids.length] }, 10_000), () => pageIndex >= QUERIES);
    const rss = rssMegabytes(sidecar.child.pid!);

    // The same SQL in-process on the same database file: the floor under the two tools.
    const db = new Database(path.join(dir, 'state', 'brain', 'index.sqlite'), { readonly: true });
    const search = db.prepare(
      `SELECT p.path, p.title, hit.snippet, hit.score FROM (SELECT rowid, snippet(pages_fts, 1, '[', ']', '…', 24) AS snippet, rank AS score FROM pages_fts
       WHERE pages_fts MATCH ? AND rank MATCH 'bm25(5.0, 1.0)' ORDER BY rank LIMIT ?) AS hit JOIN pages AS p ON p.id = hit.rowid ORDER BY hit.score`,
    );
    const page = db.prepare('SELECT path, title, content, size, truncated FROM pages WHERE path = ?');
    const bareRecall: number[] = [];
    const barePage: number[] = [];
    for (let i = 0; i < QUERIES; i++) {
      let started = performance.now();
      search.all(toFtsQuery(query(i)), 8);
      bareRecall.push(performance.now() - started);
      started = performance.now();
      page.get(corpus.ids[(i * 7_919) % corpus.ids.length]);
      barePage.push(performance.now() - started);
    }
    db.close();

    // A changed page: written, then searched for (nothing waits in between) until it is found.
    const searchable: number[] = [];
    const duringChanges: number[] = [];
    for (let round = 0; round < CHANGES; round++) {
      const id = corpus.ids[(round * 613) % corpus.ids.length]!;
      const word = `freshword${round}q${pages}`;
      const started = performance.now();
      await writeFile(path.join(corpus.dir, id), `# Changed ${round}\n\n${word} ${words.slice(200, 600).join(' ')}\n`);
      for (;;) {
        const callStarted = performance.now();
        const outcome = await turn.call('recall', { query: word }, 10_000);
        duringChanges.push(performance.now() - callStarted);
        if ((outcome.details.ids as string[] | undefined)?.includes(id)) break;
        if (performance.now() - started > 30_000) throw new Error(`${id} not searchable within 30 s`);
      }
      searchable.push(performance.now() - started);
    }
    // Many pages rewritten at once: calls keep running beside the watcher's batches for 2 s.
    const churnStarted = performance.now();
    const writes = Promise.all(
      corpus.ids.slice(0, CHURN_PAGES).map((id) => writeFile(path.join(corpus.dir, id), `# Churned\n\nchurnword ${words.slice(0, 600).join(' ')}\n`)),
    );
    const duringChurn = await callsUntil(() => turn.call('recall', { query: 'churnword', limit: 50 }, 10_000), () => performance.now() - churnStarted > 2_000, 20, PAUSE_MS);
    await writes;
    await turn.end();

    const duringChangesAll = [...duringChanges, ...duringChurn];
    const idleMax = Math.max(...idle);
    return [
      { suite: 'brain', name: `${label}: index build (${megabytes.toFixed(0)} MB, in the background)`, value: buildMs, unit: 'ms', note: pages === 10_000 ? 'goal ≤ 3,000 ms' : undefined },
      {
        suite: 'brain',
        name: `${label}: index build rate`,
        value: megabytes / (buildMs / 1000),
        unit: 'MB/s',
        reference: `bare FTS5 insert of the same text, ${(megabytes / (bareMs / 1000)).toFixed(1)} MB/s`,
        ratio: bareMs / buildMs,
        note: 'build includes the scan, the reads, titles and the external-content table; it runs at nice 10',
      },
      {
        suite: 'brain',
        name: `${label}: index build CPU time (upkeep thread)`,
        value: buildCpuMs,
        unit: 'ms',
        reference: `bare FTS5 insert CPU time, ${bare.cpuMs.toFixed(0)} ms`,
        ratio: buildCpuMs / bare.cpuMs,
        note: 'what the build costs whatever else runs on the machine',
      },
      { suite: 'brain', name: `${label}: recall p50 (Turn stream)`, value: quantile(recall, 0.5), unit: 'ms', reference: 'same SQL in-process p50', ratio: quantile(recall, 0.5) / quantile(bareRecall, 0.5) },
      { suite: 'brain', name: `${label}: recall p99 (Turn stream)`, value: quantile(recall, 0.99), unit: 'ms', reference: 'same SQL in-process p99', ratio: quantile(recall, 0.99) / quantile(bareRecall, 0.99) },
      { suite: 'brain', name: `${label}: get_page p50 (Turn stream)`, value: quantile(getPage, 0.5), unit: 'ms', reference: 'same SQL in-process p50', ratio: quantile(getPage, 0.5) / quantile(barePage, 0.5), note: pages === 10_000 ? 'goal ≤ 1 ms' : undefined },
      {
        suite: 'brain',
        name: `${label}: slowest of ${duringBuild.length} calls during the build`,
        value: Math.max(...duringBuild),
        unit: 'ms',
        reference: `slowest of ${idle.length} idle calls, ${idleMax.toFixed(1)} ms`,
        ratio: Math.max(...duringBuild) / idleMax,
        note: `p99 ${quantile(duringBuild, 0.99).toFixed(1)} ms, idle p99 ${quantile(idle, 0.99).toFixed(1)} ms${pages === 10_000 ? '; goal: none over 20 ms because of upkeep' : ''}`,
      },
      {
        suite: 'brain',
        name: `${label}: slowest of ${duringChangesAll.length} recalls while pages change`,
        value: Math.max(...duringChangesAll),
        unit: 'ms',
        reference: `slowest idle call, ${idleMax.toFixed(1)} ms`,
        ratio: Math.max(...duringChangesAll) / idleMax,
        note: `p99 ${quantile(duringChangesAll, 0.99).toFixed(1)} ms; ${CHURN_PAGES} pages rewritten at once: max ${Math.max(...duringChurn).toFixed(1)} ms`,
      },
      {
        suite: 'brain',
        name: `${label}: a changed page searchable after`,
        value: quantile(searchable, 0.5),
        unit: 'ms p50',
        note: `max ${Math.max(...searchable).toFixed(0)} ms over ${CHANGES}${pages === 10_000 ? '; goal ≤ 1,000 ms' : ''}`,
      },
      { suite: 'brain', name: `${label}: sidecar RSS`, value: rss, unit: 'MB', reference: `sidecar without --brain, ${baselineRss.toFixed(0)} MB`, ratio: rss / baselineRss },
    ];
  } finally {
    client.close();
    await sidecar.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Runs the Brain rows for each corpus size. */
export async function run(): Promise<BenchRow[]> {
  const sizes = (process.env.BENCH_BRAIN_PAGES ?? '1000,10000').split(',').map(Number).filter((n) => Number.isSafeInteger(n) && n > 0);
  const root = await mkdtemp(path.join(tmpdir(), 'bench-brain-'));
  try {
    const plain = await startSidecar({ args: ['--workspace', root, '--state-dir', path.join(root, 'plain-state')] });
    const baselineRss = rssMegabytes(plain.child.pid!);
    await plain.stop();
    const rows: BenchRow[] = [];
    for (const pages of sizes) {
      process.stderr.write(`bench: brain over ${pages} pages...\n`);
      rows.push(...(await benchCorpus(root, pages, baselineRss)));
    }
    return rows;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
