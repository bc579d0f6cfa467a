/** One row of the bench table. */
export interface BenchRow {
  /** The suite, e.g. `arguments`, `sidecar`, `controller`. */
  suite: string;
  /** What was measured, e.g. `validate clean five-field args`. */
  name: string;
  value: number;
  /** e.g. `ops/s`, `µs p50`, `ms`. */
  unit: string;
  /** What the value is compared with, measured in the same run (e.g. `raw grpc-js bidi p50`). */
  reference?: string;
  /** value / reference value; how to read it is said in `note`. */
  ratio?: number;
  note?: string;
}

/** A bench suite: runs its measurements and returns its rows. */
export type BenchSuite = () => Promise<BenchRow[]>;

/** Runs `fn` repeatedly for about `ms` milliseconds (after a warm-up) and returns operations per second. */
export function opsPerSecond(fn: () => void, ms = 1000): number {
  const warmUntil = performance.now() + Math.min(200, ms / 4);
  while (performance.now() < warmUntil) fn();
  let count = 0;
  const start = performance.now();
  const end = start + ms;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 64; i++) fn();
    count += 64;
    now = performance.now();
  }
  return (count * 1000) / (now - start);
}

/** The q-quantile (0..1) of a list of numbers. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index] as number;
}
