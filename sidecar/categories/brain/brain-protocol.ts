/**
 * What the Brain's upkeep worker and the sidecar's main thread tell each other. The worker owns the
 * writes (initial build, watcher updates, reconcile); the main thread only reads the database.
 */

/** The Brain database's layout version (see brain-store.ts); an index of another is rebuilt. */
export const brainSchemaVersion = '3';

/** The Brain's caps: passing one is logged and reported in `recall`'s answer. */
export interface BrainLimits {
  /** Pages indexed at most; pages past it (in path order at build time, later ones after) are left out. */
  maxPages: number;
  /** A page larger than this is indexed by its first `maxPageBytes` bytes only. */
  maxPageBytes: number;
  /** Bytes indexed at most, over all pages; a page that would pass it is left out. */
  maxTotalBytes: number;
}

export const defaultBrainLimits: BrainLimits = {
  maxPages: 100_000,
  maxPageBytes: 1024 * 1024,
  maxTotalBytes: 512 * 1024 * 1024,
};

/** Where the index stands. Counts are of markdown pages under the Brain folder. */
export interface BrainStatus {
  /** `building` until the first build completes (or a reused index is open), then `ready`. */
  phase: 'building' | 'ready' | 'failed';
  /** Pages found by the last scan (the build's progress is `pagesIndexed` of it). */
  pagesFound: number;
  /** Pages in the index. */
  pagesIndexed: number;
  /** Bytes of page text in the index. */
  bytesIndexed: number;
  /** Pages left out because the page cap was reached. */
  skippedByPageCap: number;
  /** Pages left out because the total-bytes cap was reached. */
  skippedByTotalCap: number;
  /** Pages indexed by their first `maxPageBytes` only. */
  truncatedPages: number;
  /** The initial build's duration, once it is done. */
  buildMs?: number;
  /** Pages the initial build (re)indexed: 0 when a restart found every page unchanged. */
  buildPagesWritten?: number;
  /** The last full rescan: how long it took and how many pages it (re)indexed. */
  lastReconcile?: { ms: number; pagesWritten: number };
  /** Why the upkeep stopped, when `phase` is `failed`. */
  error?: string;
  /** Bumped after every committed change, so a reader knows the index moved. */
  generation: number;
}

/** Sent once to the worker as `workerData`. */
export interface BrainWorkerData {
  brainDir: string;
  databasePath: string;
  limits: BrainLimits;
  /** The safety-net rescan period, in ms. */
  reconcileIntervalMs: number;
  /** How long the watcher gathers changes before applying them, in ms. */
  debounceMs: number;
  /** Milliseconds between progress lines in the log while building. */
  progressIntervalMs: number;
  /** The worker thread's nice value (Linux), so the calls' thread wins the CPU over upkeep. */
  niceness: number;
}

export type BrainToWorker = { type: 'close' } | { type: 'reconcile' };

export type BrainFromWorker =
  | { type: 'opened' }
  | { type: 'status'; status: BrainStatus }
  | { type: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; message: string; fields: Record<string, unknown> }
  | { type: 'closed' };
