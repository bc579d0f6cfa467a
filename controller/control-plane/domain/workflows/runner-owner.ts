import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { processIsRunning } from '../../../../src/process-liveness.js';

/**
 * A claim owner id for a runner of this process: `host:pid:random`. The host and pid let a runner
 * on the same machine see that an owner's process is gone and take its runs over at once, rather
 * than waiting for its claims to lapse.
 */
export function newRunnerOwner(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** The owners among `owners` whose process ran on this host and no longer runs (gone, or a zombie). */
export function deadLocalOwners(owners: Iterable<string>): string[] {
  const host = hostname();
  const dead: string[] = [];
  for (const owner of new Set(owners)) {
    const [ownerHost, pidText] = owner.split(':');
    const pid = Number(pidText);
    if (ownerHost !== host || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) continue;
    if (!processIsRunning(pid)) dead.push(owner);
  }
  return dead;
}
