import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { LimitSettings } from './limit-settings.js';
import { cgroupDir, cgroupMounts, keyedCounter, ownCgroups, removeGroupTree, removeStaleGroups, writeControl, type CgroupBackend, type LimitGroup } from './cgroup-files.js';

/**
 * Per-agent groups on cgroup v1 (the memory, pids and, for a CPU cap, cpu hierarchies), made under
 * the sidecar's own group in each, in a folder of this process (`tools-runtime-<pid>-<base36 time>`).
 * Memory counts the tmpfs pages the group's processes write, so it bounds `/tmp` and `/dev/shm` too.
 *
 * @throws Error saying why v1 cannot be used here (no memory or pids hierarchy, not writable).
 */
export function openCgroupV1(settings: LimitSettings, names: { self: string }): CgroupBackend {
  const mounts = cgroupMounts().filter((mount) => mount.version === 1);
  const own = ownCgroups();
  const parentOf = (controller: string): string => {
    const mount = mounts.find((candidate) => candidate.controllers.includes(controller));
    if (!mount) throw new Error(`no cgroup v1 ${controller} hierarchy is mounted`);
    const dir = cgroupDir(mount, own.get(controller) ?? '/');
    if (!dir) throw new Error(`this process's ${controller} cgroup is outside the mounted ${mount.mountPoint}`);
    return dir;
  };
  const controllers = ['memory', 'pids', ...(settings.cpus !== undefined ? ['cpu'] : [])];
  const bases = new Map<string, string>();
  try {
    for (const controller of controllers) {
      const parent = parentOf(controller);
      removeStaleGroups(parent);
      const base = path.join(parent, names.self);
      try {
        mkdirSync(base, { recursive: true });
      } catch (error) {
        throw new Error(`cannot make a cgroup in ${parent}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
      }
      bases.set(controller, base);
    }
  } catch (error) {
    for (const base of bases.values()) removeGroupTree(base);
    throw error;
  }
  const made = new Set<string>();
  const memoryBase = bases.get('memory')!;
  return {
    mechanism: 'cgroup-v1',
    where: memoryBase,
    group(name) {
      const dirs = [...bases].map(([controller, base]) => [controller, path.join(base, name)] as const);
      if (!made.has(name)) {
        for (const [controller, dir] of dirs) {
          mkdirSync(dir, { recursive: true });
          if (controller === 'memory') {
            writeControl(path.join(dir, 'memory.limit_in_bytes'), String(settings.memoryBytes));
            // Where swap is accounted, swap counts too (else a hog escapes into swap). Absent: no swap accounting.
            try {
              writeControl(path.join(dir, 'memory.memsw.limit_in_bytes'), String(settings.memoryBytes));
            } catch {
              // no swap accounting on this kernel
            }
          } else if (controller === 'pids') writeControl(path.join(dir, 'pids.max'), String(settings.pids));
          else if (controller === 'cpu') {
            writeControl(path.join(dir, 'cpu.cfs_period_us'), '100000');
            writeControl(path.join(dir, 'cpu.cfs_quota_us'), String(Math.round(settings.cpus! * 100_000)));
          }
        }
        made.add(name);
      }
      const memoryDir = path.join(memoryBase, name);
      const group: LimitGroup = {
        procsFiles: dirs.map(([, dir]) => path.join(dir, 'cgroup.procs')),
        oomKills: () => keyedCounter(path.join(memoryDir, 'memory.oom_control'), 'oom_kill'),
      };
      return group;
    },
    removeGroup(name) {
      let ok = true;
      for (const base of bases.values()) ok = removeGroupTree(path.join(base, name)) && ok;
      if (ok) made.delete(name);
      return ok;
    },
    close() {
      for (const base of bases.values()) removeGroupTree(base);
      made.clear();
    },
  };
}
