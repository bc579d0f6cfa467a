import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { LimitSettings } from './limit-settings.js';
import { cgroupDir, cgroupMounts, keyedCounter, ownCgroups, readText, removeGroupTree, removeStaleGroups, writeControl, type CgroupBackend } from './cgroup-files.js';

const words = (text: string | undefined) => new Set((text ?? '').split(/\s+/).filter(Boolean));

/**
 * Per-agent groups on cgroup v2, in a subtree delegated to this process: the sidecar's own group
 * when it already hands memory and pids to its children (the root of a container's cgroup
 * namespace), or a group the sidecar is alone in (a `systemd-run --scope`, a pod's container):
 * then the sidecar moves itself into a child (`tools-runtime-<pid>-sidecar`), because v2 lets a
 * group hand controllers down only once no process sits in it.
 *
 * @throws Error saying why v2 cannot be used here (not mounted, no memory or pids controller, not
 *   delegated: other processes share the group, or its files are not writable).
 */
export function openCgroupV2(settings: LimitSettings, names: { self: string }): CgroupBackend {
  const mount = cgroupMounts().find((candidate) => candidate.version === 2);
  if (!mount) throw new Error('no cgroup2 file system is mounted');
  const ownDir = cgroupDir(mount, ownCgroups().get('') ?? '/');
  if (!ownDir) throw new Error(`this process's cgroup is outside the mounted ${mount.mountPoint}`);
  const available = words(readText(path.join(ownDir, 'cgroup.controllers')));
  if (!available.has('memory') || !available.has('pids')) {
    throw new Error(`${ownDir} offers no memory and pids controllers (they are on a v1 hierarchy, or not delegated)`);
  }
  const wanted = ['memory', 'pids', ...(settings.cpus !== undefined && available.has('cpu') ? ['cpu'] : [])];
  const enable = (dir: string) => writeControl(path.join(dir, 'cgroup.subtree_control'), wanted.map((name) => `+${name}`).join(' '));
  const handsDown = (dir: string) => wanted.every((name) => words(readText(path.join(dir, 'cgroup.subtree_control'))).has(name));
  removeStaleGroups(ownDir);
  if (!handsDown(ownDir)) {
    const others = (readText(path.join(ownDir, 'cgroup.procs')) ?? '').split('\n').filter((pid) => pid !== '' && Number(pid) !== process.pid);
    if (others.length > 0) throw new Error(`${ownDir} is not delegated to the sidecar: ${others.length} other processes share it (run the sidecar in a group of its own, e.g. systemd-run --scope)`);
    const home = path.join(ownDir, `${names.self}-sidecar`);
    mkdirSync(home, { recursive: true });
    writeControl(path.join(home, 'cgroup.procs'), String(process.pid));
    try {
      enable(ownDir);
    } catch (error) {
      writeControl(path.join(ownDir, 'cgroup.procs'), String(process.pid));
      removeGroupTree(home);
      throw error;
    }
  }
  const base = path.join(ownDir, names.self);
  mkdirSync(base, { recursive: true });
  try {
    enable(base);
  } catch (error) {
    removeGroupTree(base);
    throw error;
  }
  const made = new Set<string>();
  return {
    mechanism: 'cgroup-v2',
    where: base,
    group(name) {
      const dir = path.join(base, name);
      if (!made.has(name)) {
        mkdirSync(dir, { recursive: true });
        writeControl(path.join(dir, 'memory.max'), String(settings.memoryBytes));
        try {
          // Swap would let a hog outgrow its memory: none for the agent's group.
          writeControl(path.join(dir, 'memory.swap.max'), '0');
        } catch {
          // no swap controller
        }
        writeControl(path.join(dir, 'pids.max'), String(settings.pids));
        if (wanted.includes('cpu')) writeControl(path.join(dir, 'cpu.max'), `${Math.round(settings.cpus! * 100_000)} 100000`);
        made.add(name);
      }
      return { procsFiles: [path.join(dir, 'cgroup.procs')], oomKills: () => keyedCounter(path.join(dir, 'memory.events'), 'oom_kill') };
    },
    removeGroup(name) {
      const ok = removeGroupTree(path.join(base, name));
      if (ok) made.delete(name);
      return ok;
    },
    close() {
      removeGroupTree(base);
      made.clear();
    },
  };
}
