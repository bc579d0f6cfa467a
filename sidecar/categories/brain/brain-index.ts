import { existsSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { silentLogger, ToolRuntimeError, type Logger } from '../../../src/index.js';
import { brainSchemaVersion, defaultBrainLimits, type BrainFromWorker, type BrainLimits, type BrainStatus } from './brain-protocol.js';
import { toFtsQuery } from './fts-query.js';
import { startBrainWorker } from './start-brain-worker.js';

/** One recall hit. */
export interface BrainHit {
  /** The page's path relative to the Brain folder. */
  id: string;
  title: string;
  /** Matched words in [brackets], with context. */
  snippet: string;
  /** bm25 score (lower is better). */
  score: number;
}

/** One page, whole (or its first `maxPageBytes` when `truncated`). */
export interface BrainPage {
  id: string;
  title: string;
  content: string;
  /** The file's size in bytes. */
  size: number;
  truncated: boolean;
}

/** An answer, or the index's status when it had no index to answer from in time. */
export type BrainAnswer<T> = { ready: true; value: T; status: BrainStatus } | { ready: false; status: BrainStatus };

export interface BrainIndexOptions {
  /** The folder of markdown pages (searched recursively). */
  brainDir: string;
  /** The SQLite database file, in the sidecar's state folder; its folder is created. */
  databasePath: string;
  limits?: Partial<BrainLimits>;
  logger?: Logger;
  /** The safety-net full rescan period. Default 60,000 ms. */
  reconcileIntervalMs?: number;
  /** How long watcher events are gathered before they are applied. Default 50 ms. */
  debounceMs?: number;
  /** Milliseconds between progress lines while building. Default 1,000. */
  progressIntervalMs?: number;
  /**
   * The upkeep thread's nice value where the platform has per-thread priorities (Linux). Default
   * 10: when the machine is busy, the thread serving calls gets the CPU before the index's upkeep.
   */
  niceness?: number;
}

/** How a read waits for the first build. */
export interface BrainReadOptions {
  signal: AbortSignal;
  /** Longest wait for the initial build when no index exists yet (0: answer at once). */
  waitMs: number;
}

const emptyStatus: BrainStatus = {
  phase: 'building',
  pagesFound: 0,
  pagesIndexed: 0,
  bytesIndexed: 0,
  skippedByPageCap: 0,
  skippedByTotalCap: 0,
  truncatedPages: 0,
  generation: 0,
};

/**
 * The Brain's full-text index, as the sidecar's main thread sees it. `start` launches the upkeep
 * worker thread at once (it builds or reuses the index in the state folder, watches the folder and
 * reconciles periodically; see BrainUpkeep) and opens a read-only connection once the database
 * exists. Reads never scan: they query SQLite (FTS5 MATCH ranked by bm25, or the page by its
 * unique path) and return. Only while no index exists yet does a read wait, up to `waitMs`, for the
 * initial build; past that it answers with the status instead. Lives as long as the sidecar;
 * `close()` stops the worker and closes the database.
 */
export class BrainIndex {
  private current: BrainStatus = { ...emptyStatus };
  private db: Database.Database | undefined;
  private searchStatement: Database.Statement | undefined;
  private pageStatement: Database.Statement | undefined;
  private readonly waiters = new Set<() => void>();
  private readonly worker: Worker;
  private readonly logger: Logger;
  private readonly exited: Promise<void>;
  private closing: Promise<void> | undefined;
  /** The caps in force. */
  readonly limits: BrainLimits;

  private constructor(private readonly options: BrainIndexOptions) {
    this.logger = options.logger ?? silentLogger;
    this.limits = { ...defaultBrainLimits, ...options.limits };
    this.worker = startBrainWorker({
      brainDir: options.brainDir,
      databasePath: options.databasePath,
      limits: this.limits,
      reconcileIntervalMs: options.reconcileIntervalMs ?? 60_000,
      debounceMs: options.debounceMs ?? 50,
      progressIntervalMs: options.progressIntervalMs ?? 1_000,
      niceness: options.niceness ?? 10,
    });
    this.worker.on('message', (message: BrainFromWorker) => this.receive(message));
    this.worker.on('error', (error) => {
      this.logger.error('brain index worker failed', { component: 'brain', error: error.message });
      if (this.current.phase !== 'ready') this.update({ ...this.current, phase: 'failed', error: error.message });
    });
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    // An index kept from an earlier run answers at once, before the worker has even started.
    if (existsSync(options.databasePath)) void this.openReader(true);
  }

  /**
   * Starts the index for `brainDir` in the background and returns at once.
   * Does not throw for a bad folder or database: the failure is logged and reads report it.
   */
  static start(options: BrainIndexOptions): BrainIndex {
    return new BrainIndex(options);
  }

  /** Where the index stands (a copy). */
  get status(): BrainStatus {
    return { ...this.current };
  }

  /**
   * Ranks pages for free-text `query` (made safe for MATCH).
   * @throws ToolRuntimeError `invalid_arguments` for a query without words; `tool_failed` when the
   *   index failed or is closed; the signal's reason (`aborted`) when aborted while waiting.
   */
  async search(query: string, limit: number, options: BrainReadOptions): Promise<BrainAnswer<BrainHit[]>> {
    const match = toFtsQuery(query);
    if (!(await this.whenReady(options))) return { ready: false, status: this.status };
    const hits = this.searchStatement!.all(match, limit) as BrainHit[];
    return { ready: true, value: hits, status: this.status };
  }

  /**
   * One page by id (its relative path): one indexed read. A page already indexed is returned even
   * while the first build runs.
   * @throws ToolRuntimeError `tool_failed` for an unknown id (once the index is built), a failed or
   *   closed index; the signal's reason when aborted while waiting.
   */
  async getPage(id: string, options: BrainReadOptions): Promise<BrainAnswer<BrainPage>> {
    const read = () => {
      const row = this.pageStatement?.get(id) as (Omit<BrainPage, 'truncated'> & { truncated: number }) | undefined;
      return row ? { ...row, truncated: row.truncated === 1 } : undefined;
    };
    const early = this.current.phase === 'ready' ? undefined : read();
    if (early) return { ready: true, value: early, status: this.status };
    if (!(await this.whenReady(options))) return { ready: false, status: this.status };
    const page = read();
    if (!page) throw new ToolRuntimeError('tool_failed', `no Brain page has the id ${JSON.stringify(id)}; ids are the paths recall returns`);
    return { ready: true, value: page, status: this.status };
  }

  /** Asks the worker for a full rescan now (the periodic one runs anyway). */
  reconcile(): void {
    if (!this.closing) this.worker.postMessage({ type: 'reconcile' });
  }

  /**
   * Stops the worker (it finishes the batch in hand and closes its database; terminated after
   * `timeoutMs`) and closes the read connection. Idempotent.
   */
  close(timeoutMs = 5_000): Promise<void> {
    this.closing ??= (async () => {
      this.db?.close();
      this.db = undefined;
      this.wake();
      this.worker.postMessage({ type: 'close' });
      const timer = setTimeout(() => void this.worker.terminate(), timeoutMs);
      await this.exited;
      clearTimeout(timer);
    })();
    return this.closing;
  }

  /** True once reads can be answered; false when `waitMs` passed first. */
  private async whenReady(options: BrainReadOptions): Promise<boolean> {
    const { signal, waitMs } = options;
    const check = () => {
      if (this.closing) throw new ToolRuntimeError('tool_failed', 'the Brain index is closed (the sidecar is stopping)');
      if (this.current.phase === 'failed') throw new ToolRuntimeError('tool_failed', `the Brain index failed: ${this.current.error ?? 'unknown error'}`);
      return this.current.phase === 'ready' && this.db !== undefined;
    };
    if (check()) return true;
    if (waitMs <= 0) return false;
    signal.throwIfAborted();
    return new Promise<boolean>((resolve, reject) => {
      const done = (outcome: () => boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.waiters.delete(onChange);
        try {
          resolve(outcome());
        } catch (error) {
          reject(error);
        }
      };
      const onChange = () => {
        try {
          if (check()) done(() => true);
        } catch (error) {
          done(() => {
            throw error;
          });
        }
      };
      const onAbort = () =>
        done(() => {
          throw signal.reason instanceof Error ? signal.reason : new ToolRuntimeError('aborted', 'the Brain read was aborted');
        });
      const timer = setTimeout(() => done(() => false), waitMs);
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(onChange);
    });
  }

  private receive(message: BrainFromWorker): void {
    if (message.type === 'status') this.update(message.status);
    else if (message.type === 'log') this.logger[message.level](message.message, { component: 'brain', ...message.fields });
    else if (message.type === 'opened') void this.openReader();
  }

  /**
   * Opens the read connection: once the worker says the database is ready (`kept` false), or at
   * start on a database kept from an earlier run (`kept`), which is used only when it is a complete
   * index of this layout and folder; otherwise the worker's `opened` comes later.
   */
  private async openReader(kept = false): Promise<void> {
    try {
      // Loaded here, not at the top: a sidecar without Brain never loads the SQLite binding.
      const { default: Sqlite } = await import('better-sqlite3');
      if (this.closing || this.db) return;
      // A WAL reader is not blocked by the writer; the short busy timeout bounds the rare exception
      // (recovery after a crash) instead of better-sqlite3's 5 s default on the calls' thread.
      const db = new Sqlite(this.options.databasePath, { readonly: true, fileMustExist: true, timeout: 200 });
      if (kept) {
        const usable = keptIndexPages(db, this.options.brainDir);
        if (usable === undefined) {
          db.close();
          return;
        }
        if (this.current.generation === 0) this.current = { ...this.current, phase: 'ready', pagesFound: usable, pagesIndexed: usable };
      }
      // ORDER BY rank lets FTS5 sort by bm25 (title weighs 5, text 1) itself and compute snippets
      // for the rows returned only; ordering by a bm25() column made a snippet for every match.
      this.searchStatement = db.prepare(
        `SELECT p.path AS id, p.title AS title, hit.snippet AS snippet, hit.score AS score
         FROM (SELECT rowid, snippet(pages_fts, 1, '[', ']', '…', 24) AS snippet, rank AS score FROM pages_fts
               WHERE pages_fts MATCH ? AND rank MATCH 'bm25(5.0, 1.0)' ORDER BY rank LIMIT ?) AS hit
         JOIN pages AS p ON p.id = hit.rowid ORDER BY hit.score`,
      );
      this.pageStatement = db.prepare('SELECT path AS id, title, content, size, truncated FROM pages WHERE path = ?');
      this.db = db;
      this.wake();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (kept) {
        // Whatever is wrong with the kept file, the worker rebuilds it and says so.
        this.logger.debug('kept brain index not usable at start', { component: 'brain', error: message });
        return;
      }
      this.logger.error('brain index could not be read', { component: 'brain', error: message });
      this.update({ ...this.current, phase: 'failed', error: message });
    }
  }

  private update(status: BrainStatus): void {
    this.current = status;
    this.wake();
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

/** The page count of a complete index of this layout for `brainDir`, or undefined. */
function keptIndexPages(db: Database.Database, brainDir: string): number | undefined {
  const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get() !== undefined;
  if (!hasMeta) return undefined;
  const meta = new Map((db.prepare('SELECT key, value FROM meta').all() as Array<{ key: string; value: string }>).map((row) => [row.key, row.value]));
  if (meta.get('schema') !== brainSchemaVersion || meta.get('brain_dir') !== brainDir || meta.get('complete') !== '1') return undefined;
  return (db.prepare('SELECT count(*) AS n FROM pages').get() as { n: number }).n;
}
