import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isToolRuntimeError } from '../../../../../../src/index.js';
import { buildSandboxArgv } from '../../../../../../sidecar/categories/computer/sandbox/bwrap-argv.js';
import { checkFileAccess, hiddenPathTest } from '../../../../../../sidecar/categories/computer/sandbox/file-access.js';
import { checkTarget, hostAllowed } from '../../../../../../sidecar/categories/computer/sandbox/network-proxy.js';
import { defaultSandboxSettings, effectivePolicy, parseNetworkPolicy, type SandboxPolicy } from '../../../../../../sidecar/categories/computer/sandbox/sandbox-policy.js';
import { parseSidecarArgs, SidecarUsageError } from '../../../../../../sidecar/cli.js';

const root = mkdtempSync(join(tmpdir(), 'sandbox-policy-'));
const workspace = join(root, 'ws');
const outside = join(root, 'outside');
mkdirSync(join(workspace, '.git', 'hooks'), { recursive: true });
mkdirSync(join(workspace, 'secrets'));
mkdirSync(outside);
writeFileSync(join(outside, 'token'), 'x');
writeFileSync(join(workspace, 'key'), 'x');
symlinkSync(join(workspace, 'key'), join(root, 'key-link'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const policy = (over: Partial<SandboxPolicy> = {}): SandboxPolicy => ({ mode: 'workspace-write', network: { mode: 'off' }, workspace, hide: [], readable: [], ...over });
const argv = (p: SandboxPolicy) => buildSandboxArgv({ argv: ['/bin/sh', '-c', 'true'], cwd: workspace, env: { PATH: '/usr/bin' }, policy: p, bwrap: '/usr/bin/bwrap', seccomp: false });
/** The index of `a b c` as consecutive arguments. */
const at = (args: string[], ...seq: string[]) => args.findIndex((_, i) => seq.every((part, j) => args[i + j] === part));

describe('the bwrap argv', () => {
  it('is the command itself under off, bwrap in front otherwise, the command after --', () => {
    expect(argv(policy({ mode: 'off' }))).toMatchObject({ file: '/bin/sh', args: ['-c', 'true'] });
    const { file, args } = argv(policy());
    expect(file).toBe('/usr/bin/bwrap');
    expect(args.slice(args.indexOf('--') + 1)).toEqual(['/bin/sh', '-c', 'true']);
    for (const flag of ['--unshare-user', '--disable-userns', '--unshare-pid', '--unshare-net', '--new-session', '--die-with-parent']) expect(args).toContain(flag);
    expect(at(args, '--cap-drop', 'ALL')).toBeGreaterThan(-1);
  });

  it('mounts the workspace writable, then .git read-only, then hides paths even under it', () => {
    const { args } = argv(policy({ hide: [join(workspace, 'secrets'), join(root, 'key-link'), join(outside, 'token')] }));
    const bind = at(args, '--bind', workspace, workspace);
    const hooks = at(args, '--ro-bind', join(workspace, '.git'), join(workspace, '.git'));
    const secrets = at(args, '--tmpfs', join(workspace, 'secrets'));
    expect(bind).toBeGreaterThan(at(args, '--ro-bind', '/', '/'));
    expect(hooks).toBeGreaterThan(bind);
    expect(secrets).toBeGreaterThan(bind);
    expect(at(args, '--remount-ro', join(workspace, 'secrets'))).toBeGreaterThan(secrets);
    // A symlinked file is hidden at its real path, with /dev/null.
    expect(at(args, '--ro-bind', '/dev/null', join(workspace, 'key'))).toBeGreaterThan(bind);
    // Under /tmp and outside the workspace it is gone already (a fresh tmpfs): no mount needed.
    expect(args).not.toContain(join(outside, 'token'));
    expect(at(args, '--tmpfs', '/tmp')).toBeLessThan(bind);
  });

  it('a process with a PTY of its own keeps it as its controlling terminal (no --new-session)', () => {
    const spec = buildSandboxArgv({ argv: ['/bin/bash'], cwd: workspace, env: {}, policy: policy(), bwrap: 'bwrap', terminal: true });
    expect(spec.args).not.toContain('--new-session');
    expect(spec.args).toContain('--die-with-parent');
  });

  it('read-only binds the workspace read-only; network on keeps the host network', () => {
    expect(at(argv(policy({ mode: 'read-only' })).args, '--ro-bind', workspace, workspace)).toBeGreaterThan(-1);
    expect(argv(policy({ network: { mode: 'on' } })).args).not.toContain('--unshare-net');
  });
});

describe('the policy', () => {
  it('a turn tightens, never loosens', () => {
    const settings = defaultSandboxSettings();
    expect(effectivePolicy(settings, workspace, { mode: 'read-only' }).mode).toBe('read-only');
    expect(effectivePolicy({ ...settings, mode: 'read-only' }, workspace, { mode: 'workspace-write' }).mode).toBe('read-only');
    expect(effectivePolicy({ ...settings, network: { mode: 'on' } }, workspace, { networkOff: true }).network).toEqual({ mode: 'off' });
    expect(effectivePolicy({ ...settings, mode: 'off', network: { mode: 'on' } }, workspace, { mode: 'workspace-write' }).mode).toBe('workspace-write');
  });

  it('parses --network and refuses what it cannot read', () => {
    expect(parseNetworkPolicy('allow:Example.com, *.npmjs.org,10.0.0.1')).toEqual({ mode: 'allow', hosts: ['example.com', '*.npmjs.org', '10.0.0.1'] });
    expect(() => parseNetworkPolicy('allow:')).toThrow(/at least one host/);
    expect(() => parseNetworkPolicy('allow:a b')).toThrow(/not a host/);
    expect(() => parseNetworkPolicy('sometimes')).toThrow(/expected off, on or allow/);
  });

  it('the flags: defaults, the sidecar\'s own secrets hidden, bad values refused', () => {
    const tokenFile = join(outside, 'token');
    const options = parseSidecarArgs(['--workspace', workspace, '--state-dir', join(root, 'state'), '--token-file', tokenFile, '--hide', 'relative/x'], {});
    expect(options.config.sandbox).toMatchObject({ mode: 'workspace-write', network: { mode: 'off' }, allowUnsandboxed: false });
    expect(options.config.sandbox!.hide).toEqual(expect.arrayContaining([join(root, 'state'), tokenFile, join(process.cwd(), 'relative/x')]));
    expect(parseSidecarArgs(['--workspace', workspace, '--sandbox', 'off'], {}).config.sandbox!.network).toEqual({ mode: 'on' });
    const refused = (args: string[]) => {
      try {
        parseSidecarArgs(['--workspace', workspace, ...args], {});
      } catch (error) {
        return error instanceof SidecarUsageError ? error.message : 'not a usage error';
      }
      return 'accepted';
    };
    expect(refused(['--sandbox', 'maybe'])).toMatch(/--sandbox: expected off, read-only or workspace-write/);
    expect(refused(['--sandbox', 'off', '--network', 'off'])).toMatch(/needs a sandbox to enforce it/);
    expect(refused(['--network', 'allow:'])).toMatch(/--network: allow: needs at least one host/);
    expect(refused(['--hide', '/'])).toMatch(/--hide \//);
  });
});

describe('the file tools\' side', () => {
  it('refuses hidden paths for reading, everything for writing under read-only, and .git/hooks', () => {
    const p = policy({ hide: [join(workspace, 'secrets')], readable: [join(workspace, 'secrets', 'open')] });
    const hidden = hiddenPathTest(p);
    const code = (fn: () => void) => {
      try {
        fn();
        return 'allowed';
      } catch (error) {
        return isToolRuntimeError(error) ? error.code : 'other';
      }
    };
    expect(code(() => checkFileAccess(p, hidden, join(workspace, 'secrets', 'k'), 'secrets/k', 'read'))).toBe('sandbox_denied');
    expect(code(() => checkFileAccess(p, hidden, join(workspace, 'secrets', 'open', 'f'), 'secrets/open/f', 'read'))).toBe('allowed');
    expect(code(() => checkFileAccess(p, hidden, join(workspace, 'notes'), 'notes', 'write'))).toBe('allowed');
    expect(code(() => checkFileAccess(p, hidden, join(workspace, '.git', 'hooks', 'pre-commit'), '.git/hooks/pre-commit', 'write'))).toBe('sandbox_denied');
    const ro = policy({ mode: 'read-only' });
    expect(code(() => checkFileAccess(ro, hiddenPathTest(ro), join(workspace, 'notes'), 'notes', 'write'))).toBe('sandbox_denied');
  });
});

describe('the proxy\'s host rules', () => {
  it('matches exact names and *.globs (subdomains only)', () => {
    expect(hostAllowed('registry.npmjs.org', ['*.npmjs.org'])).toBe(true);
    expect(hostAllowed('npmjs.org', ['*.npmjs.org'])).toBe(false);
    expect(hostAllowed('evilnpmjs.org', ['*.npmjs.org'])).toBe(false);
    expect(hostAllowed('Example.COM.', ['example.com'])).toBe(true);
  });

  it('refuses private targets unless listed by address', async () => {
    expect(await checkTarget('127.0.0.1', ['127.0.0.1'], 443)).toEqual({ address: '127.0.0.1' });
    expect(await checkTarget('localhost', ['localhost'], 443)).toMatchObject({ refused: expect.stringMatching(/private, loopback or link-local/) });
    expect(await checkTarget('10.1.2.3', ['127.0.0.1'], 443)).toMatchObject({ refused: expect.stringMatching(/not listed/) });
  });
});
