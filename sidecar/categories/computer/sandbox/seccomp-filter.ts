import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The seccomp filter every sandboxed command runs under (bwrap loads it last, after no_new_privs,
 * with `--seccomp FD`), written as classic BPF bytes here: no libseccomp, no compiler.
 *
 * Why it exists: a sidecar that runs as root runs its commands as the host's uid 0 (bwrap maps the
 * sandbox's uid onto the sidecar's). With every capability dropped they cannot chown or mount, but
 * the owner of a file may still set its setuid bit, and a `chmod 4755` on a program built in the
 * workspace leaves a setuid-root program on the host for any local user. So:
 * - `chmod`, `fchmod`, `fchmodat`, `fchmodat2` with S_ISUID or S_ISGID in the mode fail (EPERM);
 * - `open`, `openat`, `creat` that create (O_CREAT, O_TMPFILE) with those bits, and `mknod`,
 *   `mknodat` with them, fail (EPERM);
 * - `openat2` (its mode is behind a pointer a filter cannot read) and `io_uring_setup` (its
 *   operations bypass the filter) answer ENOSYS, which their users take as an older kernel and
 *   fall back from;
 * - with `denyUnixSockets` (`--network on`, where the sandbox shares the host's network namespace
 *   and with it every abstract Unix socket of the host): `socket(AF_UNIX, ...)` fails (EPERM).
 *   `socketpair` stays allowed (an unnamed pair reaches nothing outside).
 * A syscall of another ABI than the native one (i386 or x32 on x86_64, arm32 on aarch64) fails
 * with ENOSYS: its numbers differ and this filter does not list them.
 */

const AUDIT_ARCH = { x64: 0xc000003e, arm64: 0xc00000b7 } as const;
const X32_SYSCALL_BIT = 0x40000000;

/** The syscalls the filter looks at, by the machine's architecture (undefined: none on that one). */
const SYSCALLS = {
  x64: { open: 2, creat: 85, openat: 257, chmod: 90, fchmod: 91, fchmodat: 268, fchmodat2: 452, mknod: 133, mknodat: 259, socket: 41, openat2: 437, io_uring_setup: 425 },
  arm64: { open: undefined, creat: undefined, openat: 56, chmod: undefined, fchmod: 52, fchmodat: 53, fchmodat2: 452, mknod: undefined, mknodat: 33, socket: 198, openat2: 437, io_uring_setup: 425 },
} as const;

const S_ISUID_ISGID = 0o6000;
const O_CREAT_TMPFILE = 0o100 | 0o20000000;
const AF_UNIX = 1;
const EPERM = 1;
const ENOSYS = 38;

// Classic BPF opcodes (linux/filter.h) and seccomp's return values (linux/seccomp.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
/** Offsets in struct seccomp_data: nr, arch, then args[6] as u64 (the low half first: little-endian). */
const NR = 0;
const ARCH = 4;
const argLow = (index: number) => 16 + 8 * index;

/** One instruction, with jump targets as labels resolved when the program is assembled. */
type Insn = { code: number; k: number; jt?: string; jf?: string } | { label: string };

/** Assembles labelled instructions into `struct sock_filter[]` bytes (8 bytes each, little-endian). */
function assemble(insns: Insn[]): Buffer {
  const code = insns.filter((insn): insn is Exclude<Insn, { label: string }> => !('label' in insn));
  const labels = new Map<string, number>();
  let index = 0;
  for (const insn of insns) {
    if ('label' in insn) labels.set(insn.label, index);
    else index++;
  }
  const out = Buffer.alloc(code.length * 8);
  code.forEach((insn, at) => {
    const offset = (label: string | undefined) => {
      if (label === undefined) return 0;
      const target = labels.get(label);
      if (target === undefined || target <= at || target - at - 1 > 255) throw new Error(`seccomp filter: bad jump to ${label}`);
      return target - at - 1;
    };
    out.writeUInt16LE(insn.code, at * 8);
    out.writeUInt8(offset(insn.jt), at * 8 + 2);
    out.writeUInt8(offset(insn.jf), at * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, at * 8 + 4);
  });
  return out;
}

/** The architectures the filter is built for (the sidecar's own: `process.arch`). */
export type SeccompArch = keyof typeof AUDIT_ARCH;

/** Whether this machine's architecture has a filter (x86_64 and aarch64). */
export function seccompArch(arch: string = process.arch): SeccompArch | undefined {
  return arch === 'x64' || arch === 'arm64' ? arch : undefined;
}

/**
 * The filter's bytes for `arch` (see the module's comment for what it refuses).
 *
 * @throws Error only on a bug in the program (a jump out of range).
 */
export function buildSeccompFilter(options: { arch: SeccompArch; denyUnixSockets: boolean }): Buffer {
  const nr = SYSCALLS[options.arch];
  const insns: Insn[] = [
    { code: LD_W_ABS, k: ARCH },
    { code: JEQ_K, k: AUDIT_ARCH[options.arch], jf: 'enosys' },
    { code: LD_W_ABS, k: NR },
  ];
  if (options.arch === 'x64') insns.push({ code: JGE_K, k: X32_SYSCALL_BIT, jt: 'enosys' });
  let rule = 0;
  /** `if (nr == number) { body }`, the body ending in a jump; A holds nr again after it. */
  const when = (number: number | undefined, body: Insn[]) => {
    if (number === undefined) return;
    const next = `next${rule++}`;
    insns.push({ code: JEQ_K, k: number, jf: next }, ...body, { label: next });
  };
  const modeHas = (arg: number): Insn[] => [
    { code: LD_W_ABS, k: argLow(arg) },
    { code: JSET_K, k: S_ISUID_ISGID, jt: 'eperm', jf: 'allow' },
  ];
  const createsWithMode = (flagsArg: number, modeArg: number): Insn[] => [
    { code: LD_W_ABS, k: argLow(flagsArg) },
    { code: JSET_K, k: O_CREAT_TMPFILE, jf: 'allow' },
    ...modeHas(modeArg),
  ];
  when(nr.chmod, modeHas(1));
  when(nr.fchmod, modeHas(1));
  when(nr.fchmodat, modeHas(2));
  when(nr.fchmodat2, modeHas(2));
  when(nr.creat, modeHas(1));
  when(nr.mknod, modeHas(1));
  when(nr.mknodat, modeHas(2));
  when(nr.open, createsWithMode(1, 2));
  when(nr.openat, createsWithMode(2, 3));
  when(nr.openat2, [{ code: JEQ_K, k: 0, jt: 'enosys', jf: 'enosys' }]);
  when(nr.io_uring_setup, [{ code: JEQ_K, k: 0, jt: 'enosys', jf: 'enosys' }]);
  if (options.denyUnixSockets) {
    when(nr.socket, [
      { code: LD_W_ABS, k: argLow(0) },
      { code: JEQ_K, k: AF_UNIX, jt: 'eperm', jf: 'allow' },
    ]);
  }
  insns.push(
    { label: 'allow' },
    { code: RET_K, k: RET_ALLOW },
    { label: 'eperm' },
    { code: RET_K, k: RET_ERRNO | EPERM },
    { label: 'enosys' },
    { code: RET_K, k: RET_ERRNO | ENOSYS },
  );
  return assemble(insns);
}

/**
 * This user's folder for filter files, shared by its processes (so none is left behind per
 * process, even one SIGKILLed): `$TMPDIR/tools-runtime-seccomp-UID`, made 0700. One that is not a
 * folder of this user's, closed to others, is not used: a private `mkdtemp` folder is, instead.
 */
function filterFolder(): string {
  const uid = process.getuid?.() ?? -1;
  const shared = path.join(tmpdir(), `tools-runtime-seccomp-${uid}`);
  try {
    mkdirSync(shared, { mode: 0o700 });
  } catch {
    // there already (checked below), or not makeable
  }
  try {
    const stat = lstatSync(shared);
    if (stat.isDirectory() && stat.uid === uid && (stat.mode & 0o077) === 0) return shared;
  } catch {
    // fall through
  }
  return mkdtempSync(path.join(tmpdir(), 'tools-runtime-seccomp-'));
}

let folder: string | undefined;
const written = new Map<boolean, string>();

/**
 * A file holding the filter for this machine (named by its content, written once, atomically, in
 * this user's folder; written again when a tmp cleaner removed it under a long-running sidecar),
 * or undefined on an architecture without one. bwrap reads it from a descriptor: see
 * `seccompLauncher`.
 */
export function seccompFilterFile(options: { denyUnixSockets: boolean }): string | undefined {
  const arch = seccompArch();
  if (!arch) return undefined;
  const known = written.get(options.denyUnixSockets);
  if (known && existsSync(known)) return known;
  const bytes = buildSeccompFilter({ arch, denyUnixSockets: options.denyUnixSockets });
  const name = `${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}.bpf`;
  let file = path.join((folder ??= filterFolder()), name);
  if (!existsSync(file)) {
    if (!existsSync(folder)) file = path.join((folder = filterFolder()), name);
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, bytes, { mode: 0o400 });
    renameSync(temporary, file);
  }
  written.set(options.denyUnixSockets, file);
  return file;
}

/** The descriptor bwrap reads the filter from (opened by the launcher, see below). */
export const SECCOMP_FD = 3;

/**
 * `file`/`args` that open the filter as descriptor 3 and exec bwrap with it: `/bin/sh -c 'exec "$@"
 * 3<"$0"'`. A shell, not a descriptor passed by the spawner, so every way the sidecar execs a
 * prepared command (child_process, and a PTY library that passes only 0-2) gives bwrap the filter
 * the same way; its cost is one exec of `sh`.
 */
export function seccompLauncher(filterFile: string, bwrap: string, bwrapArgs: string[]): { file: string; args: string[] } {
  return { file: '/bin/sh', args: ['-c', `exec "$@" ${SECCOMP_FD}<"$0"`, filterFile, bwrap, ...bwrapArgs] };
}
