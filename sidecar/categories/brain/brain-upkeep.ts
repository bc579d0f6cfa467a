import { readFileSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { BrainFromWorker, BrainStatus, BrainWorkerData } from './brain-protocol.js';
import { BrainStore, type PageWrite } from './brain-store.js';
import { readPages } from './read-pages.js';
import { isPagePath, scanPages, type PageStamp } from './scan-pages.js';
import { createTreeWatcher, type TreeWatcher } from './tree-watcher.js';

// A build writes this much page text per transaction: large enough that FTS5's per-commit segment
// flush is amortised, small enough that progress moves and a close is prompt.
const BATCH_BYTES = 4 * 1024 * 1024;
const BATCH_PAGES = 1_000;
const READ_CONCURRENCY = 16;

/**
 * CPU time this thread has used, in ms (Linux: /proc/thread-self/stat, 10 ms ticks), or NaN. On a
 * shared machine the build's CPU time says more about its cost than its wall time does.
 */
function threadCpuMs(): number {
  try {
    const fields = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/**
 * The Brain's upkeep, run in its worker thread: builds the index in the background (reusing an
 * existing one, re-indexing only pages whose mtime or size changed), keeps it current from a
 * folder watcher (changes gathered for `debounceMs`, then applied), and rescans the whole folder
 * every `reconcileIntervalMs` as a safety net. Every step is serialised on one chain, so writes
 * never interleave. Reports status and log lines through `post`. `close()` stops the watcher and
 * the timers, lets the batch in hand finish, and closes the database.
 */
export class BrainUpkeep {
  private readonly store: BrainStore;
  private readonly status: BrainStatus;
  private readonly skipped = new Map<string, 'pages' | 'bytes'>();
  private readonly dirty = new Set<string>();
  private chain: Promise<void> = Promise.resolve();
  private watcher: TreeWatcher | undefined;
  private dirtyTimer: NodeJS.Timeout | undefined;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private closing = false;
  private readonly read = (entries: Array<[string, PageStamp]>) =>
    readPages({ root: this.options.brainDir, entries, maxPageBytes: this.options.limits.maxPageBytes, concurrency: READ_CONCURRENCY });
  private lastProgressLog = 0;
  // Where a build's time goes (logged with "brain index built").
  private readonly timing = { scanMs: 0, readWaitMs: 0, writeMs: 0 };

  constructor(
    private readonly options: BrainWorkerData,
    private readonly post: (message: BrainFromWorker) => void,
  ) {
    this.store = new BrainStore({ databasePath: options.databasePath, brainDir: options.brainDir });
    const reused = this.store.complete;
    this.status = {
      phase: reused ? 'ready' : 'building',
      pagesFound: this.store.pages.size,
      pagesIndexed: this.store.pages.size,
      bytesIndexed: this.store.totalBytes,
      skippedByPageCap: 0,
      skippedByTotalCap: 0,
      truncatedPages: [...this.store.pages.values()].filter((page) => page.truncated).length,
      generation: 0,
    };
    post({ type: 'opened' });
    this.publish();
    if (reused) this.log('info', 'brain index reused; checking for changes in the background', { pages: this.store.pages.size });
  }

  /** Starts the watcher and the initial build (or the reused index's catch-up scan). */
  start(): void {
    this.enqueue(async () => {
      this.watcher = createTreeWatcher({
        root: this.options.brainDir,
        onChange: (id) => this.markDirty(id),
        onError: (error, folder) => {
          this.log('warn', 'brain folder watch failed; the periodic rescan covers it', { folder, error: error.message });
          this.scheduleReconcile(1_000);
        },
      });
      await this.watcher.ready;
      await this.reconcile();
    });
  }

  /** Runs a full rescan now (after the work in hand). */
  requestReconcile(): void {
    this.enqueue(() => this.reconcile());
  }

  /** Stops everything and closes the database; resolves once the work in hand has stopped. */
  async close(): Promise<void> {
    this.closing = true;
    this.watcher?.close();
    clearTimeout(this.dirtyTimer);
    clearTimeout(this.reconcileTimer);
    await this.chain;
    this.store.close();
  }

  private enqueue(task: () => Promise<void>): void {
    this.chain = this.chain.then(async () => {
      if (this.closing) return;
      try {
        await task();
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        this.log('error', 'brain index upkeep failed; retrying at the next rescan', { error: message });
        if (this.status.phase !== 'ready') {
          this.status.phase = 'failed';
          this.status.error = message;
          this.publish();
        }
        this.scheduleReconcile(Math.min(this.options.reconcileIntervalMs, 10_000));
      }
    });
  }

  private markDirty(id: string): void {
    this.dirty.add(id);
    this.dirtyTimer ??= setTimeout(() => {
      this.dirtyTimer = undefined;
      this.enqueue(() => this.applyDirty());
    }, this.options.debounceMs);
  }

  private scheduleReconcile(delayMs = this.options.reconcileIntervalMs): void {
    if (this.closing) return;
    clearTimeout(this.reconcileTimer);
    this.reconcileTimer = setTimeout(() => this.enqueue(() => this.reconcile()), delayMs);
  }

  /** A full scan: the initial build, and the safety net after it. */
  private async reconcile(): Promise<void> {
    const started = performance.now();
    const cpuStarted = threadCpuMs();
    const building = this.status.phase !== 'ready';
    const found = await scanPages({ root: this.options.brainDir });
    this.timing.scanMs = Math.round(performance.now() - started);
    this.timing.readWaitMs = 0;
    this.timing.writeMs = 0;
    this.status.pagesFound = found.size;
    for (const id of this.skipped.keys()) if (!found.has(id)) this.skipped.delete(id);
    if (building) this.log('info', 'brain index: building', { pagesFound: found.size, pagesIndexed: this.store.pages.size, scanMs: Math.round(performance.now() - started) });
    const written = await this.sync(found, () => true, building);
    if (this.closing) return;
    const ms = Math.round(performance.now() - started);
    this.status.lastReconcile = { ms, pagesWritten: written };
    if (building) {
      this.store.markComplete();
      const buildMs = ms;
      Object.assign(this.status, { phase: 'ready', buildMs, buildPagesWritten: written, error: undefined });
      this.log('info', 'brain index built', {
        pages: this.store.pages.size,
        pagesWritten: written,
        megabytes: Number((this.store.totalBytes / 1e6).toFixed(1)),
        buildMs,
        cpuMs: threadCpuMs() - cpuStarted,
        scanMs: this.timing.scanMs,
        readWaitMs: Math.round(this.timing.readWaitMs),
        writeMs: Math.round(this.timing.writeMs),
      });
      this.reportCaps();
    } else {
      this.log(written > 0 ? 'info' : 'debug', 'brain index rescanned', { pagesFound: found.size, pagesWritten: written, ms });
    }
    this.publish();
    this.scheduleReconcile();
  }

  /** Applies what the watcher reported: each id is a page, a folder, or something gone. */
  private async applyDirty(): Promise<void> {
    const ids = [...this.dirty].sort();
    this.dirty.clear();
    let written = 0;
    for (const id of ids) {
      if (this.closing) return;
      const info = await lstat(path.join(this.options.brainDir, id)).catch(() => undefined);
      const under = (candidate: string) => candidate === id || id === '' || candidate.startsWith(`${id}/`);
      if (info?.isDirectory()) {
        written += await this.sync(await scanPages({ root: this.options.brainDir, under: id }), under, false);
      } else if (info?.isFile() && isPagePath(id)) {
        written += await this.sync(new Map([[id, { mtimeMs: info.mtimeMs, size: info.size }]]), (candidate) => candidate === id, false);
      } else {
        // Gone, or no longer a page: drop it and anything that was under it.
        for (const skipped of this.skipped.keys()) if (under(skipped)) this.skipped.delete(skipped);
        written += await this.sync(new Map(), under, false);
      }
    }
    if (written > 0) this.log('debug', 'brain index updated', { pages: written });
  }

  /**
   * Makes the index match `found` for the ids `inScope` selects: deletes what is gone, reads and
   * writes what is new or changed (batched, reading the next batch while writing this one).
   * Returns how many pages were written.
   */
  private async sync(found: Map<string, PageStamp>, inScope: (id: string) => boolean, progress: boolean): Promise<number> {
    const deletes = [...this.store.pages.keys()].filter((id) => inScope(id) && !found.has(id));
    const changed = [...found].filter(([id, stamp]) => {
      const old = this.store.pages.get(id);
      return !old || old.mtimeMs !== stamp.mtimeMs || old.size !== stamp.size;
    });
    if (deletes.length > 0) {
      this.store.apply([], deletes);
      this.publish();
    }
    const batches: Array<Array<[string, PageStamp]>> = [];
    let batch: Array<[string, PageStamp]> = [];
    let batchBytes = 0;
    for (const entry of changed) {
      batch.push(entry);
      batchBytes += Math.min(entry[1].size, this.options.limits.maxPageBytes);
      if (batch.length >= BATCH_PAGES || batchBytes >= BATCH_BYTES) {
        batches.push(batch);
        batch = [];
        batchBytes = 0;
      }
    }
    if (batch.length > 0) batches.push(batch);
    let written = 0;
    let next = batches.length > 0 ? this.read(batches[0]!) : undefined;
    for (let index = 0; index < batches.length; index++) {
      const waitStarted = performance.now();
      const writes = await next!;
      this.timing.readWaitMs += performance.now() - waitStarted;
      if (this.closing) return written;
      // Start reading the next batch before writing this one: the reads run on libuv's threads.
      next = index + 1 < batches.length ? this.read(batches[index + 1]!) : undefined;
      const { admitted, evicted } = this.admit(writes);
      const writeStarted = performance.now();
      this.store.apply(admitted, evicted);
      this.timing.writeMs += performance.now() - writeStarted;
      written += admitted.length;
      this.publish();
      if (progress && performance.now() - this.lastProgressLog >= this.options.progressIntervalMs) {
        this.lastProgressLog = performance.now();
        this.log('info', 'brain index: building', {
          pagesIndexed: this.store.pages.size,
          pagesFound: this.status.pagesFound,
          megabytes: Number((this.store.totalBytes / 1e6).toFixed(1)),
        });
      }
      await yieldToLoop();
    }
    return written;
  }

  /**
   * Applies the caps: a new page past the page cap, or any page past the bytes cap, is left out
   * (and its older version evicted, so the index never answers with text the page no longer has).
   */
  private admit(writes: PageWrite[]): { admitted: PageWrite[]; evicted: string[] } {
    const { maxPages, maxTotalBytes } = this.options.limits;
    let count = this.store.pages.size;
    let bytes = this.store.totalBytes;
    const admitted: PageWrite[] = [];
    const evicted: string[] = [];
    for (const page of writes) {
      const old = this.store.pages.get(page.path);
      const reason = !old && count >= maxPages ? 'pages' : bytes - (old?.bytes ?? 0) + page.bytes > maxTotalBytes ? 'bytes' : undefined;
      if (reason) {
        const first = ![...this.skipped.values()].includes(reason);
        this.skipped.set(page.path, reason);
        if (first && this.status.phase === 'ready') this.reportCaps();
        if (old) {
          evicted.push(page.path);
          count--;
          bytes -= old.bytes;
        }
        continue;
      }
      this.skipped.delete(page.path);
      if (!old) count++;
      bytes += page.bytes - (old?.bytes ?? 0);
      admitted.push(page);
    }
    return { admitted, evicted };
  }

  private reportCaps(): void {
    const { skippedByPageCap, skippedByTotalCap, truncatedPages } = this.countCaps();
    if (skippedByPageCap + skippedByTotalCap + truncatedPages === 0) return;
    this.log('warn', 'brain index: caps passed', { skippedByPageCap, skippedByTotalCap, truncatedPages, limits: this.options.limits });
  }

  private countCaps(): Pick<BrainStatus, 'skippedByPageCap' | 'skippedByTotalCap' | 'truncatedPages'> {
    let skippedByPageCap = 0;
    let skippedByTotalCap = 0;
    for (const reason of this.skipped.values()) {
      if (reason === 'pages') skippedByPageCap++;
      else skippedByTotalCap++;
    }
    let truncatedPages = 0;
    for (const page of this.store.pages.values()) if (page.truncated) truncatedPages++;
    return { skippedByPageCap, skippedByTotalCap, truncatedPages };
  }

  private publish(): void {
    Object.assign(this.status, this.countCaps(), { pagesIndexed: this.store.pages.size, bytesIndexed: this.store.totalBytes });
    this.status.generation++;
    this.post({ type: 'status', status: { ...this.status } });
  }

  private log(level: 'debug' | 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown>): void {
    this.post({ type: 'log', level, message, fields });
  }
}
