import { readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** One agent's group: where a process is placed, and what the kernel counted there. */
export interface LimitGroup {
  /** `cgroup.procs` files a starting process writes its pid to (one per v1 hierarchy, one on v2). */
  readonly procsFiles: readonly string[];
  /** Processes the kernel's OOM killer took in this group so far (a counter; 0 where unknown). */
  oomKills(): number;
}

/** A cgroup version's way to make and remove per-agent groups under the sidecar's own. */
export interface CgroupBackend {
  readonly mechanism: 'cgroup-v2' | 'cgroup-v1';
  /** Where the groups are made, for the start-up line. */
  readonly where: string;
  /** Makes (or finds) the group `name` with the limits set. @throws Error when the kernel refuses. */
  group(name: string): LimitGroup;
  /** Removes the group `name` (empty by then); false when the kernel refused (still in use). */
  removeGroup(name: string): boolean;
  /** Removes every group made (those still in use stay, and are removed at a later start). */
  close(): void;
}

/** A cgroup file system mounted on this machine: v1 (`cgroup`, with its controllers) or v2. */
export interface CgroupMount {
  version: 1 | 2;
  /** Where it is mounted. */
  mountPoint: string;
  /** The cgroup path the mount shows at its mount point ('/' unless a subtree was bind-mounted). */
  root: string;
  /** v1: the controllers of this hierarchy (`memory`, `pids`, `cpu`, ...). */
  controllers: string[];
}

/** The cgroup mounts of this process's mount namespace, from `/proc/self/mountinfo`. */
export function cgroupMounts(mountinfo = readText('/proc/self/mountinfo') ?? ''): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const [fsType, , superOptions = ''] = right.split(' ');
    const unescape = (text: string) => text.replace(/\\(\d{3})/g, (_match, octal: string) => String.fromCharCode(parseInt(octal, 8)));
    if (fsType === 'cgroup2') mounts.push({ version: 2, mountPoint: unescape(fields[4]!), root: unescape(fields[3]!), controllers: [] });
    else if (fsType === 'cgroup') mounts.push({ version: 1, mountPoint: unescape(fields[4]!), root: unescape(fields[3]!), controllers: superOptions.split(',') });
  }
  return mounts;
}

/**
 * This process's cgroup per hierarchy, from `/proc/self/cgroup`: `''` is the v2 one (`0::/path`),
 * and each v1 controller maps to its path.
 */
export function ownCgroups(text = readText('/proc/self/cgroup') ?? ''): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    if (match[1] === '') own.set('', match[2]!);
    else for (const controller of match[1]!.split(',')) own.set(controller, match[2]!);
  }
  return own;
}

/** The folder of cgroup `cgroupPath` in `mount`; undefined when the mount does not show it. */
export function cgroupDir(mount: CgroupMount, cgroupPath: string): string | undefined {
  const root = mount.root === '/' ? '' : mount.root;
  if (root !== '' && cgroupPath !== root && !cgroupPath.startsWith(`${root}/`)) return undefined;
  return path.join(mount.mountPoint, cgroupPath.slice(root.length));
}

/** A file's text, or undefined when it cannot be read. */
export function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Writes a cgroup control file. @throws Error naming the file and the kernel's answer. */
export function writeControl(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch (error) {
    throw new Error(`cannot write ${value.trim()} to ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

/** The counter `key` of a flat keyed file (`memory.events`, `memory.oom_control`), 0 when absent. */
export function keyedCounter(file: string, key: string): number {
  const text = readText(file);
  const match = text === undefined ? null : new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

/** Removes a group folder and its child groups, deepest first; false when one stays (in use). */
export function removeGroupTree(dir: string): boolean {
  let ok = true;
  let entries: string[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  } catch {
    return true;
  }
  for (const name of entries) ok = removeGroupTree(path.join(dir, name)) && ok;
  try {
    rmdirSync(dir);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? ok : false;
  }
  return ok;
}

/**
 * Removes the groups earlier sidecars left under `parent` (`tools-runtime-<pid>-...` whose process
 * is gone: it was SIGKILLed before it could remove them). Never throws.
 */
export function removeStaleGroups(parent: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(parent).filter((name) => /^tools-runtime-\d+-/.test(name));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(name.split('-')[2]);
    if (pid === process.pid || alive(pid)) continue;
    removeGroupTree(path.join(parent, name));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
