import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { CgroupBackend, LimitGroup } from './cgroup-files.js';
import { openCgroupV1 } from './cgroup-v1.js';
import { openCgroupV2 } from './cgroup-v2.js';
import { launcherArgv } from './launcher.js';
import { describeLimitSettings, formatBytes, type LimitSettings } from './limit-settings.js';

/** How the limits are enforced on this machine, strongest first. */
export type LimitMechanism = 'cgroup-v2' | 'cgroup-v1' | 'rlimit' | 'off';

/** One process's place under the limits: the argv that starts it there, and how to judge its end. */
export interface LimitedLaunch {
  /** `argv` behind the launcher (see launcherArgv). */
  argv: string[];
  /** Whether the OOM killer took a process of this launch's group since it started. */
  outOfMemory(): boolean;
  /** The process ended: its group may be removed once nothing of it runs. */
  release(): void;
}

/** The sidecar's limits: the mechanism found, and a launch per process. */
export interface ProcessLimiter {
  readonly settings: LimitSettings;
  readonly mechanism: LimitMechanism;
  /** What the start-up line says: the mechanism, where, the limits, and why a stronger one was not used. */
  readonly description: string;
  /** Places `argv` of agent `agent` under the limits. @throws Error when the group cannot be made. */
  launch(argv: readonly string[], agent: string, options?: { keepFds?: readonly number[] }): LimitedLaunch;
  /** Removes the groups (those still in use stay, for the next start to remove). */
  close(): void;
}

/** Groups kept at most; beyond, groups with no running process are removed first. */
const MAX_GROUPS = 256;

/**
 * The group name of an agent: its id's safe characters (for a person reading /sys/fs/cgroup) and a
 * hash (distinct ids never share a group, whatever they hold).
 */
export function agentGroupName(agent: string): string {
  const safe = agent.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 40);
  return `agent-${safe}-${createHash('sha256').update(agent).digest('hex').slice(0, 10)}`;
}

const place = (files: readonly string[]) =>
  new Promise<void>((resolve, reject) => {
    const script = files.map((file) => `echo $$ > '${file}'`).join(' && ');
    execFile('/bin/sh', ['-c', script], { timeout: 5_000 }, (error, _stdout, stderr) => (error ? reject(new Error(stderr.trim() || error.message)) : resolve()));
  });

/**
 * Finds the strongest mechanism this machine allows and opens it: cgroup v2 where a subtree is
 * delegated to the sidecar, else cgroup v1 (memory and pids hierarchies writable), else rlimits
 * (RLIMIT_NPROC only: it counts every process of the user, not the agent's, and root ignores it).
 * A cgroup is kept only once a process was placed in it for real. Under every mechanism, `--limits
 * off` included, commands get `oom_score_adj` 1000; the sidecar lowers its own where the kernel
 * lets it (CAP_SYS_RESOURCE). Never rejects.
 */
export async function openProcessLimiter(settings: LimitSettings): Promise<ProcessLimiter> {
  const notes: string[] = [];
  try {
    writeFileSync('/proc/self/oom_score_adj', '-500');
  } catch {
    notes.push('the sidecar keeps oom_score_adj 0 (lowering it needs CAP_SYS_RESOURCE); commands have 1000');
  }
  if (!settings.enabled) return limiterOver(settings, 'off', undefined, notes);
  const names = { self: `tools-runtime-${process.pid}-${Date.now().toString(36)}` };
  for (const open of [openCgroupV2, openCgroupV1]) {
    let backend: CgroupBackend | undefined;
    try {
      backend = open(settings, names);
      const probe = backend.group('probe');
      await place(probe.procsFiles);
      backend.removeGroup('probe');
      return limiterOver(settings, backend.mechanism, backend, notes);
    } catch (error) {
      backend?.close();
      notes.push(`${open === openCgroupV2 ? 'cgroup v2' : 'cgroup v1'}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return limiterOver(settings, 'rlimit', undefined, notes);
}

/**
 * Tasks (processes and threads) of this process's real user now: RLIMIT_NPROC counts them all,
 * so the fallback's bound is these plus the agent's `pids`, or it would stop a laptop's commands
 * for the user's browser threads. 0 for root, which the kernel exempts anyway.
 */
function userTasks(): number {
  const uid = process.getuid?.() ?? 0;
  if (uid === 0) return 0;
  let tasks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) === uid) tasks += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    } catch {
      // gone meanwhile
    }
  }
  return tasks;
}

function limiterOver(settings: LimitSettings, mechanism: LimitMechanism, backend: CgroupBackend | undefined, notes: string[]): ProcessLimiter {
  const running = new Map<string, number>();
  const maxProcesses = mechanism === 'rlimit' ? userTasks() + settings.pids : undefined;
  const what =
    mechanism === 'off'
      ? 'off (--limits off): no memory, process or CPU bound; /tmp unsized'
      : mechanism === 'rlimit'
        ? `rlimit only: RLIMIT_NPROC ${maxProcesses} (the ${maxProcesses! - settings.pids} tasks the sidecar's user ran at start-up plus ${settings.pids}; counted over the whole user, not enforced for root), no memory or CPU bound; /tmp ${formatBytes(settings.tmpBytes)}`
        : `${mechanism} per agent under ${backend!.where}: ${describeLimitSettings(settings)}`;
  const description = [what, ...notes].join('; ');
  const makeRoom = () => {
    if (running.size < MAX_GROUPS || !backend) return;
    for (const [name, count] of running) if (count === 0 && backend.removeGroup(name)) running.delete(name);
  };
  return {
    settings,
    mechanism,
    description,
    launch(argv, agent, options = {}) {
      const keepFds = options.keepFds ?? [];
      if (!backend) {
        return { argv: launcherArgv(argv, { procsFiles: [], keepFds, ...(maxProcesses !== undefined ? { maxProcesses } : {}) }), outOfMemory: () => false, release: () => {} };
      }
      const name = agentGroupName(agent);
      if (!running.has(name)) makeRoom();
      const group: LimitGroup = backend.group(name);
      running.set(name, (running.get(name) ?? 0) + 1);
      const before = group.oomKills();
      let released = false;
      return {
        argv: launcherArgv(argv, { procsFiles: group.procsFiles, keepFds }),
        outOfMemory: () => group.oomKills() > before,
        release() {
          if (released) return;
          released = true;
          running.set(name, Math.max(0, (running.get(name) ?? 1) - 1));
        },
      };
    },
    close() {
      backend?.close();
      running.clear();
    },
  };
}

const shared = new Map<string, Promise<ProcessLimiter>>();
// The limiters opened so far, for the exit handler (which cannot wait on a promise).
const opened = new Set<ProcessLimiter>();

/**
 * This process's limiter for `settings` (opened on first use, closed at the process's exit so its
 * groups go with it). The start-up line and every launch share it.
 */
export function processLimiterFor(settings: LimitSettings): Promise<ProcessLimiter> {
  const key = JSON.stringify(settings);
  let limiter = shared.get(key);
  if (!limiter) {
    limiter = openProcessLimiter(settings).then((open) => {
      opened.add(open);
      return open;
    });
    shared.set(key, limiter);
    if (shared.size === 1) process.once('exit', closeAll);
  }
  return limiter;
}

function closeAll(): void {
  for (const limiter of opened) limiter.close();
}
