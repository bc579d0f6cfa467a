import { readdirSync, readFileSync } from 'node:fs';

/** What a launch does before the command's exec, besides closing the sidecar's descriptors. */
export interface LaunchSteps {
  /** `cgroup.procs` files to write the launcher's own pid to: the process is in its group before the command starts. */
  procsFiles: readonly string[];
  /** RLIMIT_NPROC for the command (the fallback where no cgroup can be had). */
  maxProcesses?: number;
  /** Descriptors above 2 the command must keep (one the sandbox reads, say). */
  keepFds?: readonly number[];
}

// O_CLOEXEC as /proc/<pid>/fdinfo's `flags:` shows it (octal).
const O_CLOEXEC = 0o2000000;

let inherited: number[] | undefined;

/**
 * The sidecar's descriptors above 2 that a child would inherit (no close-on-exec): those its own
 * launcher left open (a shell's `3< secret`, bash's 255). Node and libuv open all of theirs
 * close-on-exec, so these are there from the start: read once (a sidecar with many connections
 * holds hundreds of descriptors, and a launch must stay cheap).
 */
export function inheritableDescriptors(): number[] {
  inherited ??= scanDescriptors();
  return inherited;
}

function scanDescriptors(): number[] {
  const found: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return found;
  }
  for (const name of names) {
    const fd = Number(name);
    if (!(fd > 2)) continue;
    try {
      const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
      if (flags && (parseInt(flags[1]!, 8) & O_CLOEXEC) === 0) found.push(fd);
    } catch {
      // closed meanwhile (the directory read's own descriptor, for one)
    }
  }
  return found.sort((a, b) => a - b);
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * The argv that starts `argv` after the launch steps, in the process that becomes the command (the
 * shell `exec`s it, so the pid, the process group and the pipes stay): it closes what the sidecar
 * would leak, raises its own `oom_score_adj` to 1000 (allowed without privileges: the OOM killer
 * takes the command, never the sidecar), writes its pid to the group's `cgroup.procs` (so the
 * command and all it forks start inside the limits: no window where it runs outside), sets the
 * rlimit fallback, then execs. A placement that fails ends the launch with status 125 and a line on
 * stderr that names the file: nothing runs outside its limits.
 * dash (`/bin/sh`) cannot name descriptors above 9, so bash launches when one that high must close.
 */
export function launcherArgv(argv: readonly string[], steps: LaunchSteps): string[] {
  const keep = new Set(steps.keepFds ?? []);
  const close = inheritableDescriptors().filter((fd) => !keep.has(fd));
  const bash = close.some((fd) => fd > 9);
  const lines: string[] = [];
  if (close.length > 0) lines.push(`exec ${close.map((fd) => `${fd}>&-`).join(' ')}`);
  lines.push('echo 1000 >/proc/self/oom_score_adj 2>/dev/null');
  for (const file of steps.procsFiles) {
    lines.push(`echo $$ >${quote(file)} || { echo "tools-runtime: the command was not started: it could not be placed in its limits group (${file.replace(/["$`\\]/g, '')})" >&2; exit 125; }`);
  }
  if (steps.maxProcesses !== undefined) lines.push(`ulimit ${bash ? '-u' : '-p'} ${Math.floor(steps.maxProcesses)} 2>/dev/null`);
  lines.push('exec "$@"');
  // --norc: bash whose stdin is a socket (Node's pipes are socket pairs) would take itself for rshd's
  // child and read ~/.bashrc before the command.
  return [...(bash ? ['/bin/bash', '--norc', '--noprofile'] : ['/bin/sh']), '-c', lines.join('\n'), 'tools-runtime-launch', ...argv];
}

/** Exit status of a launch whose placement failed (see launcherArgv). */
export const LAUNCH_REFUSED_STATUS = 125;
