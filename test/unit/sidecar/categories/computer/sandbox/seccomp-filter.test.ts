import { describe, expect, it } from 'vitest';
import { buildSeccompFilter, seccompLauncher, type SeccompArch } from '../../../../../../sidecar/categories/computer/sandbox/seccomp-filter.js';

// A classic BPF interpreter for the few opcodes the filter uses, run on a synthetic seccomp_data:
// the program's decisions are checked without a kernel (the escape corpus checks them with one).
function run(program: Buffer, data: { arch: number; nr: number; args?: number[] }): string {
  const bytes = Buffer.alloc(64);
  bytes.writeUInt32LE(data.nr, 0);
  bytes.writeUInt32LE(data.arch, 4);
  (data.args ?? []).forEach((value, index) => bytes.writeUInt32LE(value >>> 0, 16 + 8 * index));
  let a = 0;
  for (let pc = 0; pc < program.length / 8; ) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) {
      a = bytes.readUInt32LE(k);
      pc++;
    } else if (code === 0x15 || code === 0x35 || code === 0x45) {
      const taken = code === 0x15 ? a === k : code === 0x35 ? a >= k : (a & k) !== 0;
      pc += 1 + (taken ? jt : jf);
    } else if (code === 0x06) {
      if (k === 0x7fff0000) return 'allow';
      return (k & 0xffff) === 1 ? 'EPERM' : (k & 0xffff) === 38 ? 'ENOSYS' : `ret ${k}`;
    } else throw new Error(`unknown opcode ${code}`);
  }
  throw new Error('fell off the program');
}

const X64 = 0xc000003e;
const ARM64 = 0xc00000b7;

describe('the seccomp filter', () => {
  const x64 = buildSeccompFilter({ arch: 'x64', denyUnixSockets: false });
  const x64Net = buildSeccompFilter({ arch: 'x64', denyUnixSockets: true });
  const arm = buildSeccompFilter({ arch: 'arm64', denyUnixSockets: true });

  it('refuses setuid and setgid modes on x86_64, allows plain ones', () => {
    expect(run(x64, { arch: X64, nr: 90, args: [0, 0o4755] })).toBe('EPERM'); // chmod
    expect(run(x64, { arch: X64, nr: 91, args: [3, 0o2755] })).toBe('EPERM'); // fchmod
    expect(run(x64, { arch: X64, nr: 268, args: [-100, 0, 0o6755] })).toBe('EPERM'); // fchmodat
    expect(run(x64, { arch: X64, nr: 452, args: [-100, 0, 0o4700, 0] })).toBe('EPERM'); // fchmodat2
    expect(run(x64, { arch: X64, nr: 268, args: [-100, 0, 0o755] })).toBe('allow');
    expect(run(x64, { arch: X64, nr: 133, args: [0, 0o104755, 0] })).toBe('EPERM'); // mknod
    expect(run(x64, { arch: X64, nr: 85, args: [0, 0o4755] })).toBe('EPERM'); // creat
  });

  it('looks at open\'s mode only when it creates', () => {
    expect(run(x64, { arch: X64, nr: 257, args: [-100, 0, 0o101, 0o4755] })).toBe('EPERM'); // openat O_CREAT|O_WRONLY
    expect(run(x64, { arch: X64, nr: 257, args: [-100, 0, 0o20200002, 0o2755] })).toBe('EPERM'); // O_TMPFILE
    expect(run(x64, { arch: X64, nr: 257, args: [-100, 0, 0o2, 0o4755] })).toBe('allow'); // no O_CREAT: mode is noise
    expect(run(x64, { arch: X64, nr: 2, args: [0, 0o101, 0o644] })).toBe('allow');
  });

  it('answers ENOSYS to openat2, io_uring, x32 and foreign ABIs', () => {
    expect(run(x64, { arch: X64, nr: 437 })).toBe('ENOSYS');
    expect(run(x64, { arch: X64, nr: 425 })).toBe('ENOSYS');
    expect(run(x64, { arch: X64, nr: 0x40000000 + 90, args: [0, 0o4755] })).toBe('ENOSYS');
    expect(run(x64, { arch: 0x40000003, nr: 15, args: [0, 0o4755] })).toBe('ENOSYS'); // i386 chmod
    expect(run(x64, { arch: X64, nr: 0 })).toBe('allow'); // read
  });

  it('refuses socket(AF_UNIX) only when asked (network on); socketpair and AF_INET stay', () => {
    expect(run(x64, { arch: X64, nr: 41, args: [1, 1, 0] })).toBe('allow');
    expect(run(x64Net, { arch: X64, nr: 41, args: [1, 1, 0] })).toBe('EPERM');
    expect(run(x64Net, { arch: X64, nr: 41, args: [2, 1, 0] })).toBe('allow');
    expect(run(x64Net, { arch: X64, nr: 53, args: [1, 1, 0] })).toBe('allow');
  });

  it('uses aarch64\'s numbers there', () => {
    expect(run(arm, { arch: ARM64, nr: 53, args: [-100, 0, 0o4755] })).toBe('EPERM'); // fchmodat
    expect(run(arm, { arch: ARM64, nr: 56, args: [-100, 0, 0o101, 0o6755] })).toBe('EPERM'); // openat
    expect(run(arm, { arch: ARM64, nr: 198, args: [1, 1, 0] })).toBe('EPERM'); // socket
    expect(run(arm, { arch: ARM64, nr: 90, args: [0, 0o4755] })).toBe('allow'); // 90 is not chmod there
    expect(run(arm, { arch: X64, nr: 90, args: [0, 0o4755] })).toBe('ENOSYS');
  });

  it('is exec\'d through sh, which opens it as descriptor 3 for bwrap', () => {
    const arch: SeccompArch = 'x64';
    expect(buildSeccompFilter({ arch, denyUnixSockets: false }).length % 8).toBe(0);
    expect(seccompLauncher('/f.bpf', '/usr/bin/bwrap', ['--seccomp', '3', '--', 'true'])).toEqual({
      file: '/bin/sh',
      args: ['-c', 'exec "$@" 3<"$0"', '/f.bpf', '/usr/bin/bwrap', '--seccomp', '3', '--', 'true'],
    });
  });
});
