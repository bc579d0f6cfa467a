import { describe, expect, it } from 'vitest';
import { cgroupDir, cgroupMounts, ownCgroups } from '../../../../../../sidecar/categories/computer/sandbox/limits/cgroup-files.js';
import { launcherArgv } from '../../../../../../sidecar/categories/computer/sandbox/limits/launcher.js';
import { defaultLimitSettings, describeLimitSettings, parseLimitSettings } from '../../../../../../sidecar/categories/computer/sandbox/limits/limit-settings.js';
import { agentGroupName } from '../../../../../../sidecar/categories/computer/sandbox/limits/process-limiter.js';

const GIB = 1024 ** 3;

describe('--limits', () => {
  it('defaults to min(4 GiB, half the machine), 1,024 processes, no CPU cap, /tmp min(1 GiB, memory / 4)', () => {
    expect(defaultLimitSettings(64 * GIB)).toEqual({ enabled: true, memoryBytes: 4 * GIB, pids: 1024, tmpBytes: GIB });
    expect(defaultLimitSettings(2 * GIB)).toEqual({ enabled: true, memoryBytes: GIB, pids: 1024, tmpBytes: GIB / 4 });
  });

  it('reads off, and KEY=VALUE over the defaults', () => {
    const defaults = defaultLimitSettings(16 * GIB);
    expect(parseLimitSettings('off', defaults)).toEqual({ ...defaults, enabled: false });
    expect(parseLimitSettings('memory=512M,pids=256,cpus=1.5,tmp=64M', defaults)).toEqual({ enabled: true, memoryBytes: 512 * 1024 ** 2, pids: 256, cpus: 1.5, tmpBytes: 64 * 1024 ** 2 });
    expect(parseLimitSettings('memory=1.5GiB', defaults).memoryBytes).toBe(1.5 * GIB);
    expect(describeLimitSettings(parseLimitSettings('memory=2G,pids=100', defaults))).toBe('memory 2 GiB, 100 processes, no CPU cap, /tmp 1 GiB');
  });

  it('refuses what it cannot read, naming the part', () => {
    expect(() => parseLimitSettings('memory=lots')).toThrow(/512M or 2G, got "lots"/);
    expect(() => parseLimitSettings('pids=4')).toThrow(/pids: at least 16/);
    expect(() => parseLimitSettings('disk=1G')).toThrow(/unknown limit "disk"/);
    expect(() => parseLimitSettings('memory')).toThrow(/KEY=VALUE/);
    expect(() => parseLimitSettings('cpus=0')).toThrow(/cpus/);
  });
});

describe('finding the cgroups', () => {
  const mountinfo = [
    '30 25 0:26 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755',
    '31 30 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
    '32 30 0:28 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
    '33 30 0:29 /kubepods/pod1 /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  ].join('\n');

  it('reads v1 hierarchies with their controllers and a v2 mount with its root', () => {
    const mounts = cgroupMounts(mountinfo);
    expect(mounts.map((mount) => [mount.version, mount.mountPoint, mount.root, mount.controllers.includes('memory')])).toEqual([
      [1, '/sys/fs/cgroup/memory', '/', true],
      [1, '/sys/fs/cgroup/pids', '/', false],
      [2, '/sys/fs/cgroup/unified', '/kubepods/pod1', false],
    ]);
    const own = ownCgroups('8:pids:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/x\n0::/kubepods/pod1/c1\n');
    expect(own.get('memory')).toBe('/process_api/abc');
    expect(own.get('cpuacct')).toBe('/x');
    expect(cgroupDir(mounts[0]!, own.get('memory')!)).toBe('/sys/fs/cgroup/memory/process_api/abc');
    // A v2 mount that shows a subtree: the own group is found under it, or not at all.
    expect(cgroupDir(mounts[2]!, own.get('')!)).toBe('/sys/fs/cgroup/unified/c1');
    expect(cgroupDir(mounts[2]!, '/elsewhere')).toBeUndefined();
  });

  it('names an agent\'s group by its safe characters and a hash', () => {
    expect(agentGroupName('agent-1')).toMatch(/^agent-agent-1-[0-9a-f]{10}$/);
    expect(agentGroupName('../../x y')).toMatch(/^agent-xy-[0-9a-f]{10}$/);
    expect(agentGroupName('a/b')).not.toBe(agentGroupName('ab'));
  });
});

describe('the launcher', () => {
  it('raises oom_score_adj, places itself in its group and execs the command as its last step', () => {
    const argv = launcherArgv(['/bin/echo', "it's"], { procsFiles: ["/sys/fs/cgroup/memory/x/cgroup.procs"], maxProcesses: 64 });
    const script = argv[argv.indexOf('-c') + 1]!;
    expect(script).toContain('echo 1000 >/proc/self/oom_score_adj');
    expect(script).toContain("echo $$ >'/sys/fs/cgroup/memory/x/cgroup.procs' || {");
    expect(script).toMatch(/exit 125; }/);
    expect(script).toMatch(/ulimit -[pu] 64/);
    expect(script.trim().endsWith('exec "$@"')).toBe(true);
    expect(argv.slice(-2)).toEqual(['/bin/echo', "it's"]);
  });
});
