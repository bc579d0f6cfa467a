import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The second net under commands (the first is the supervisor of sandbox/process-group-reaper.ts): every
 * command's environment carries this sidecar's instance id, and the instance is recorded in the
 * state folder. At the first turn after a restart, the processes of recorded instances whose
 * sidecar is gone are killed, wherever they were re-parented: this covers a supervisor that was
 * itself killed. The environment, not a process id, says whose a process is, so a reused pid is
 * never mistaken for a leftover.
 */
export const INSTANCE_ENV = 'TOOLS_RUNTIME_SIDECAR_INSTANCE';

const instanceId = `${process.pid}-${randomUUID()}`;
const claimed = new Set<string>();

/** The variable every command of this sidecar gets: `{ TOOLS_RUNTIME_SIDECAR_INSTANCE: id }`. */
export function instanceEnv(): Record<string, string> {
  return { [INSTANCE_ENV]: instanceId };
}

/**
 * A process's start time (clock ticks since boot), or `undefined` when it does not run. A zombie
 * does not run: a SIGKILLed sidecar whose parent died too can stay one for as long as nothing reaps
 * it (a container's PID 1 often does not), and it must not pass for a live sidecar.
 */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
    return fields[19];
  } catch {
    return undefined;
  }
}

/** Kills (SIGKILL) every live process whose environment names `instance`; returns how many. */
function killInstance(instance: string): number {
  const needle = Buffer.from(`${INSTANCE_ENV}=${instance}\0`);
  let killed = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`).includes(needle)) continue;
      process.kill(Number(entry), 'SIGKILL');
      killed++;
    } catch {
      // gone, or not ours to read
    }
  }
  return killed;
}

/**
 * Once per state folder and process: kills the leftover commands of earlier sidecars on
 * `stateDir` that are no longer running, forgets those sidecars, and records this one. Never throws: a state folder it cannot use only loses this
 * net. Returns how many leftover processes were killed.
 */
export function reapLeftoverCommands(stateDir: string): number {
  if (claimed.has(stateDir)) return 0;
  claimed.add(stateDir);
  const folder = path.join(stateDir, 'command-instances');
  let reaped = 0;
  try {
    mkdirSync(folder, { recursive: true });
    for (const name of readdirSync(folder)) {
      if (!name.endsWith('.json')) continue;
      const file = path.join(folder, name);
      try {
        const record = JSON.parse(readFileSync(file, 'utf8')) as { instance?: unknown; pid?: unknown; startTime?: unknown };
        if (typeof record.instance !== 'string' || typeof record.pid !== 'number') {
          unlinkSync(file);
          continue;
        }
        // That sidecar still runs (same pid, same start time): its commands are its own business.
        if (startTime(record.pid) !== undefined && startTime(record.pid) === record.startTime) continue;
        reaped += killInstance(record.instance);
        unlinkSync(file);
      } catch {
        // unreadable or vanished: skipped
      }
    }
    // Kept after a normal exit too: the next start then finds nothing to kill and forgets it.
    writeFileSync(path.join(folder, `${instanceId}.json`), JSON.stringify({ instance: instanceId, pid: process.pid, startTime: startTime(process.pid) }));
  } catch {
    // no usable state folder: the supervisor still covers this sidecar
  }
  return reaped;
}
