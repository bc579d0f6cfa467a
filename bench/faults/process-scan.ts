// Finds the processes a fault run started: every command it runs exports FAULT_MARK=<marker>, which
// the shell's children inherit, so /proc/<pid>/environ names them wherever they were re-parented.
import { readdirSync, readFileSync } from 'node:fs';

/** Live (non-zombie) processes whose environment holds `FAULT_MARK=<marker>`. */
export function processesMarked(marker: string): number[] {
  const needle = Buffer.from(`FAULT_MARK=${marker}\0`);
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z') continue;
      if (readFileSync(`/proc/${entry}/environ`).includes(needle)) found.push(Number(entry));
    } catch {
      // gone, or not ours
    }
  }
  return found;
}

/** Waits (at most `timeoutMs`) until no marked process is left; returns those still alive. */
export async function waitUntilGone(marker: string, timeoutMs: number): Promise<number[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const left = processesMarked(marker);
    if (left.length === 0 || Date.now() > end) return left;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** SIGKILLs every marked process (cleanup after a run that left some). */
export function killMarked(marker: string): void {
  for (const pid of processesMarked(marker)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** A command for run_command whose processes carry the marker. */
export const markedCommand = (marker: string, command: string) => `export FAULT_MARK=${marker}; ${command}`;

/** A small seeded PRNG (mulberry32): the same seed gives the same run. */
export function createRandom(seed: number): { next(): number; int(max: number): number; pick<T>(items: readonly T[]): T } {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (max) => Math.floor(next() * max), pick: (items) => items[Math.floor(next() * items.length)]! };
}
