import { describe, expect, it } from 'vitest';
import { buildSandboxArgv } from '../../../../../../sidecar/categories/computer/sandbox/bwrap-argv.js';
import type { SandboxPolicy } from '../../../../../../sidecar/categories/computer/sandbox/sandbox-policy.js';

const policy = (network: SandboxPolicy['network']): SandboxPolicy => ({ mode: 'workspace-write', network, workspace: '/tmp', hide: [], readable: [] });
const join = { nsenter: '/usr/bin/nsenter', netns: '/proc/4242/ns/net' };
const proxy = { socketPath: '/run/proxy.sock', socat: '/usr/bin/socat' };
// Without the seccomp launcher, so bwrap is what follows nsenter (the launcher's own case is below).
const spec = { argv: ['/bin/sh', '-c', 'true'] as [string, ...string[]], cwd: '/tmp', env: {}, bwrap: '/usr/bin/bwrap', seccomp: false as const };

describe('buildSandboxArgv with joinNetwork (the agent\'s network namespace)', () => {
  it('execs bwrap through nsenter into the namespace, without a network namespace of its own', () => {
    const exec = buildSandboxArgv({ ...spec, policy: policy({ mode: 'off' }), joinNetwork: join });
    expect(exec.file).toBe('/usr/bin/nsenter');
    expect(exec.args.slice(0, 3)).toEqual(['--net=/proc/4242/ns/net', '--', '/usr/bin/bwrap']);
    expect(exec.args).not.toContain('--unshare-net');
    expect(exec.args.slice(-3)).toEqual(['/bin/sh', '-c', 'true']);
  });

  it('under allow: sets the proxy variables but starts no bridge of its own (the holder runs it)', () => {
    const exec = buildSandboxArgv({ ...spec, policy: policy({ mode: 'allow', hosts: ['example.com'] }), proxy, joinNetwork: join });
    expect(exec.env.HTTPS_PROXY).toBe('http://127.0.0.1:3128');
    expect(exec.args).not.toContain(proxy.socketPath);
    expect(exec.args.join(' ')).not.toContain('socat');
    const alone = buildSandboxArgv({ ...spec, policy: policy({ mode: 'allow', hosts: ['example.com'] }), proxy });
    expect(alone.file).toBe('/usr/bin/bwrap');
    expect(alone.args).toContain('--unshare-net');
    expect(alone.args.join(' ')).toContain('socat');
  });

  it('with the seccomp filter, nsenter execs the launcher that opens it, which execs bwrap', () => {
    const exec = buildSandboxArgv({ ...spec, seccomp: undefined, policy: policy({ mode: 'off' }), joinNetwork: join });
    expect(exec.file).toBe('/usr/bin/nsenter');
    expect(exec.args.slice(0, 3)).toEqual(['--net=/proc/4242/ns/net', '--', '/bin/sh']);
    expect(exec.args).toContain('/usr/bin/bwrap');
    expect(exec.args).toContain('--seccomp');
  });

  it('ignores the namespace when the network is on', () => {
    const exec = buildSandboxArgv({ ...spec, policy: policy({ mode: 'on' }), joinNetwork: join });
    expect(exec.file).toBe('/usr/bin/bwrap');
    expect(exec.args).not.toContain('--unshare-net');
  });
});
