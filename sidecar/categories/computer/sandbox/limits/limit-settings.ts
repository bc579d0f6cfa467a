import { totalmem } from 'node:os';

/**
 * What one agent's processes may use together: every command, session and server the sidecar
 * starts for it, with what they write to their sandbox's `/tmp` and `/dev/shm` (tmpfs pages are
 * charged to the memory of the process that writes them). `--limits` sets them; `--limits off`
 * (`enabled: false`) opts out of the kernel's bounds (commands still get `oom_score_adj` 1000).
 */
export interface LimitSettings {
  enabled: boolean;
  /** Memory of the agent's processes together, tmpfs included, in bytes. */
  memoryBytes: number;
  /** Processes (and threads) of the agent's processes together. */
  pids: number;
  /**
   * A hard cap in CPUs (1.5 = one and a half cores), or undefined: no cap, and the agent's
   * processes together weigh as one process against the sidecar's neighbours (a group of their own).
   */
  cpus?: number;
  /** Size of each sandbox's private `/tmp` and `/dev/shm` tmpfs, in bytes. */
  tmpBytes: number;
}

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

/**
 * The defaults, and why: memory min(4 GiB, half the machine) (a build or a test suite fits, and
 * one agent leaves the sidecar and another agent room on a small machine); 1,024 processes (a
 * parallel build uses a few hundred, a fork bomb stops there); no CPU cap (a cap idles cores no one
 * else wants; the agent's own group already keeps the sidecar responsive); `/tmp` min(1 GiB, a
 * quarter of the memory), a bound per sandbox, the memory limit bounding their sum.
 */
export function defaultLimitSettings(machineBytes = totalmem()): LimitSettings {
  const memoryBytes = Math.max(64 * MIB, Math.min(4 * GIB, Math.floor(machineBytes / 2)));
  return { enabled: true, memoryBytes, pids: 1024, tmpBytes: Math.min(GIB, Math.floor(memoryBytes / 4)) };
}

const UNITS: Record<string, number> = { '': 1, k: 1024, m: MIB, g: GIB, t: 1024 * GIB };

/** `512M`, `2G`, `1.5G`, `1048576` (binary units, an optional `B`/`iB`). @throws Error naming the text. */
export function parseByteSize(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i.exec(text.trim());
  if (!match) throw new Error(`expected a size such as 512M or 2G, got ${JSON.stringify(text)}`);
  const bytes = Math.floor(Number(match[1]) * UNITS[match[2]!.toLowerCase()]!);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new Error(`expected a positive size, got ${JSON.stringify(text)}`);
  return bytes;
}

/**
 * `--limits off`, or a comma list over the defaults: `memory=2G,pids=512,cpus=1.5,tmp=256M`
 * (also `cpus=off`: no cap). Lower bounds keep a sandbox able to start at all.
 *
 * @throws Error with a message naming the bad part.
 */
export function parseLimitSettings(text: string, defaults: LimitSettings = defaultLimitSettings()): LimitSettings {
  const trimmed = text.trim();
  if (trimmed === 'off') return { ...defaults, enabled: false };
  if (trimmed === 'on' || trimmed === '') return { ...defaults };
  const settings: LimitSettings = { ...defaults, enabled: true };
  for (const part of trimmed.split(',')) {
    const [key, value, extra] = part.split('=').map((piece) => piece.trim());
    if (!key || value === undefined || value === '' || extra !== undefined) throw new Error(`expected off or KEY=VALUE,... (memory, pids, cpus, tmp), got ${JSON.stringify(part)}`);
    if (key === 'memory') settings.memoryBytes = atLeast('memory', parseByteSize(value), 32 * MIB);
    else if (key === 'tmp') settings.tmpBytes = atLeast('tmp', parseByteSize(value), MIB);
    else if (key === 'pids') {
      if (!/^\d+$/.test(value)) throw new Error(`pids: expected a whole number, got ${JSON.stringify(value)}`);
      settings.pids = atLeast('pids', Number(value), 16);
    } else if (key === 'cpus') {
      if (value === 'off') delete settings.cpus;
      else if (!/^\d+(\.\d+)?$/.test(value) || Number(value) < 0.01) throw new Error(`cpus: expected a number of CPUs such as 1.5 (at least 0.01) or off, got ${JSON.stringify(value)}`);
      else settings.cpus = Number(value);
    } else throw new Error(`unknown limit ${JSON.stringify(key)}: expected memory, pids, cpus or tmp`);
  }
  return settings;
}

function atLeast(name: string, value: number, minimum: number): number {
  if (value < minimum) throw new Error(`${name}: at least ${name === 'pids' ? minimum : formatBytes(minimum)} (a sandbox needs that much to start), got ${name === 'pids' ? value : formatBytes(value)}`);
  return value;
}

/** `2 GiB`, `512 MiB`, `1.5 GiB`: how the result and the start-up line say a size. */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of [['TiB', 1024 * GIB], ['GiB', GIB], ['MiB', MIB], ['KiB', 1024]] as const) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(2))} ${unit}`;
  }
  return `${bytes} B`;
}

/** The settings as the start-up line says them. */
export function describeLimitSettings(settings: LimitSettings): string {
  if (!settings.enabled) return 'off';
  return `memory ${formatBytes(settings.memoryBytes)}, ${settings.pids} processes, ${settings.cpus === undefined ? 'no CPU cap' : `${settings.cpus} CPUs`}, /tmp ${formatBytes(settings.tmpBytes)}`;
}
