import { linkSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isToolRuntimeError } from '../../../../../../src/index.js';
import { buildSandboxArgv, runtimeFolderMounts } from '../../../../../../sidecar/categories/computer/sandbox/bwrap-argv.js';
import { checkFileAccess, gitMetadataReason, hiddenPathTest, resolveHiddenPaths } from '../../../../../../sidecar/categories/computer/sandbox/file-access.js';
import { findGitMetadata } from '../../../../../../sidecar/categories/computer/sandbox/git-metadata.js';
import { effectivePolicy, defaultSandboxSettings, sharedStateRoot, type SandboxPolicy } from '../../../../../../sidecar/categories/computer/sandbox/sandbox-policy.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'sandbox-mounts-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A fresh workspace under `root` with `files` (path → content; a trailing `/` makes a folder). */
function workspaceWith(name: string, files: Record<string, string>): string {
  const workspace = join(root, name);
  for (const [path, content] of Object.entries(files)) {
    if (path.endsWith('/')) mkdirSync(join(workspace, path), { recursive: true });
    else {
      mkdirSync(join(workspace, path, '..'), { recursive: true });
      writeFileSync(join(workspace, path), content);
    }
  }
  return workspace;
}
const gitdir = (prefix: string) => ({ [`${prefix}HEAD`]: 'ref: refs/heads/main\n', [`${prefix}objects/`]: '', [`${prefix}refs/`]: '', [`${prefix}config`]: '' });
const policy = (workspace: string, over: Partial<SandboxPolicy> = {}): SandboxPolicy => ({ mode: 'workspace-write', network: { mode: 'off' }, workspace, hide: [], readable: [], ...over });
const argsOf = (p: SandboxPolicy) => buildSandboxArgv({ argv: ['/bin/true'], cwd: p.workspace, env: {}, policy: p, bwrap: 'bwrap', seccomp: false }).args;
const at = (args: string[], ...seq: string[]) => args.findIndex((_, i) => seq.every((part, j) => args[i + j] === part));
const code = (fn: () => void) => {
  try {
    fn();
    return 'allowed';
  } catch (error) {
    return isToolRuntimeError(error) ? error.code : String(error);
  }
};

describe('the git metadata scan', () => {
  it('finds .git folders and files at any depth, the gitdir and commondir they name, bare repositories', () => {
    const ws = workspaceWith('scan', {
      ...gitdir('.git/'),
      ...gitdir('vendor/lib/.git/'),
      'wt/.git': 'gitdir: ../data/wtgit\n',
      ...gitdir('data/wtgit/'),
      'data/wtgit/commondir': '../main\n',
      ...gitdir('data/main/'),
      ...gitdir('mirror.git/'),
      'node_modules/dep/.git/HEAD': 'x',
      'src/a.ts': '',
    });
    const found = findGitMetadata(ws);
    expect(found.readOnly).toEqual([join(ws, '.git'), join(ws, 'data/main'), join(ws, 'data/wtgit'), join(ws, 'mirror.git'), join(ws, 'vendor/lib/.git'), join(ws, 'wt/.git')]);
    expect(found.reserve).toEqual([]);
    expect(found.truncated).toBe(false);
  });

  it('reserves the missing root .git and each submodule folder\'s .git; says when it stopped early', () => {
    const ws = workspaceWith('reserve', { 'a/b/c/': '', 'sub/': '' });
    expect(findGitMetadata(ws)).toEqual({ readOnly: [], reserve: [join(ws, '.git')], truncated: false });
    const repo = workspaceWith('submodules', { ...gitdir('.git/'), '.gitmodules': '[submodule "s"]\n\tpath = sub\n[submodule "t"]\n\tpath = ../escape\n', 'sub/': '' });
    expect(findGitMetadata(repo).reserve).toEqual([join(repo, 'sub', '.git')]);
    expect(findGitMetadata(ws, 2).truncated).toBe(true);
  });

  it('sees a repository created since the last scan (a folder\'s mtime changes)', () => {
    const ws = workspaceWith('later', { 'deep/er/': '' });
    expect(findGitMetadata(ws).readOnly).toEqual([]);
    mkdirSync(join(ws, 'deep', 'er', '.git'));
    expect(findGitMetadata(ws).readOnly).toEqual([join(ws, 'deep/er/.git')]);
  });
});

describe('the argv\'s mounts', () => {
  it('makes /proc/sys and /proc/sysrq-trigger read-only after the fresh /proc', () => {
    const args = argsOf(policy(workspaceWith('proc', {})));
    expect(at(args, '--ro-bind-try', '/proc/sys', '/proc/sys')).toBeGreaterThan(at(args, '--proc', '/proc'));
    expect(at(args, '--ro-bind-try', '/proc/sysrq-trigger', '/proc/sysrq-trigger')).toBeGreaterThan(at(args, '--proc', '/proc'));
  });

  it('pins the folders above a hidden path, then git read-only, then the masks; reserves a missing .git', () => {
    const ws = workspaceWith('order', { 'a/b/secret.env': 'x', ...gitdir('a/.git/') });
    const args = argsOf(policy(ws, { hide: [join(ws, 'a/b/secret.env')] }));
    const pinA = at(args, '--bind', join(ws, 'a'), join(ws, 'a'));
    const pinB = at(args, '--bind', join(ws, 'a/b'), join(ws, 'a/b'));
    const git = at(args, '--ro-bind', join(ws, 'a/.git'), join(ws, 'a/.git'));
    const mask = at(args, '--ro-bind', '/dev/null', join(ws, 'a/b/secret.env'));
    expect(pinA).toBeGreaterThan(at(args, '--bind', ws, ws));
    expect(pinB).toBeGreaterThan(pinA);
    expect(git).toBeGreaterThan(pinB);
    expect(mask).toBeGreaterThan(git);
    expect(at(args, '--tmpfs', join(ws, '.git'))).toBeGreaterThan(-1);
    expect(at(args, '--remount-ro', join(ws, '.git'))).toBeGreaterThan(at(args, '--tmpfs', join(ws, '.git')));
    // Read-only: nothing to pin, protect or reserve.
    const ro = argsOf(policy(ws, { mode: 'read-only', hide: [join(ws, 'a/b/secret.env')] }));
    expect(ro).not.toContain(join(ws, 'a/.git'));
    expect(at(ro, '--bind', join(ws, 'a'), join(ws, 'a'))).toBe(-1);
  });

  it('a hidden root that holds the workspace hides its other entries, never the workspace', () => {
    const stateRoot = workspaceWith('state-root', { 'other/screen': 'x', 'mine/ws/': '' });
    const ws = join(stateRoot, 'mine', 'ws');
    const p = policy(ws, { hide: [stateRoot] });
    expect(resolveHiddenPaths(p).map((entry) => entry.given)).toEqual([join(stateRoot, 'other')]);
    const hidden = hiddenPathTest(p);
    expect(hidden(join(stateRoot, 'other', 'screen'))).toBe(true);
    expect(hidden(join(ws, 'file'))).toBe(false);
  });

  it('every policy hides the shared state root', () => {
    expect(effectivePolicy(defaultSandboxSettings(), '/w').hide).toContain(sharedStateRoot());
    expect(sharedStateRoot('/home/u')).toBe('/home/u/.local/state/tools-runtime');
  });
});

describe('hidden paths fail closed', () => {
  it('a hidden folder under the workspace that is gone or replaced stops the sandbox, naming it', () => {
    const ws = workspaceWith('vanish', { 'vault/key': 'x', 'note.env': 'y' });
    const p = policy(ws, { hide: [join(ws, 'vault'), join(ws, 'note.env'), join(root, 'never-there')] });
    expect(resolveHiddenPaths(p).map((entry) => entry.given)).toEqual([join(ws, 'vault'), join(ws, 'note.env')]);
    renameSync(join(ws, 'vault'), join(ws, 'vault2'));
    expect(code(() => buildSandboxArgv({ argv: ['/bin/true'], cwd: ws, env: {}, policy: p, bwrap: 'bwrap', seccomp: false }))).toBe('sandbox_unavailable');
    mkdirSync(join(ws, 'vault'));
    expect(() => resolveHiddenPaths(p)).toThrow(/vault was replaced by another folder/);
    rmSync(join(ws, 'vault'), { recursive: true });
    renameSync(join(ws, 'vault2'), join(ws, 'vault'));
    // A file rewritten by rename (rotation) is taken as it is now.
    writeFileSync(join(ws, 'note.env.new'), 'z');
    renameSync(join(ws, 'note.env.new'), join(ws, 'note.env'));
    expect(resolveHiddenPaths(p)).toHaveLength(2);
  });

  it('a hidden symlink under the workspace re-pointed elsewhere stops the sandbox', () => {
    const ws = workspaceWith('relink', { 'real/secret': 's', 'decoy': 'd' });
    symlinkSync(join(ws, 'real/secret'), join(ws, 'link'));
    const p = policy(ws, { hide: [join(ws, 'link')] });
    expect(resolveHiddenPaths(p).map((entry) => entry.real)).toEqual([join(ws, 'real/secret')]);
    rmSync(join(ws, 'link'));
    symlinkSync(join(ws, 'decoy'), join(ws, 'link'));
    expect(() => resolveHiddenPaths(p)).toThrow(/now leads to .*decoy, not .*real\/secret/);
  });

  it('the file tools compare by inode: a hard link, a renamed folder; readable exceptions win', () => {
    const ws = workspaceWith('inode', { 'conf/secret.env': 's', 'keys/open/pub': 'p', 'plain.txt': '' });
    const p = policy(ws, { hide: [join(ws, 'conf/secret.env'), join(ws, 'keys')], readable: [join(ws, 'keys/open')] });
    // The turn's test records what it first sees, before any command ran.
    hiddenPathTest(p);
    linkSync(join(ws, 'conf/secret.env'), join(ws, 'hard.env'));
    renameSync(join(ws, 'keys'), join(ws, 'keys2'));
    const hidden = hiddenPathTest(p);
    expect(code(() => checkFileAccess(p, hidden, join(ws, 'hard.env'), 'hard.env', 'read'))).toBe('sandbox_denied');
    expect(code(() => checkFileAccess(p, hidden, join(ws, 'keys2/any'), 'keys2/any', 'read'))).toBe('sandbox_denied');
    expect(code(() => checkFileAccess(p, hidden, join(ws, 'keys/open/pub'), 'keys/open/pub', 'read'))).toBe('allowed');
    expect(code(() => checkFileAccess(p, hidden, join(ws, 'plain.txt'), 'plain.txt', 'write'))).toBe('allowed');
  });
});

describe('git metadata in the file tools', () => {
  it('refuses .git at any depth and folders that are git directories under other names', () => {
    const ws = workspaceWith('gitfiles', { ...gitdir('.git/'), ...gitdir('data/realgit/'), 'src/a.ts': '', 'HEAD/notes': '' });
    symlinkSync(join(ws, 'data'), join(ws, 'data-link'));
    for (const path of ['.git/config', '.git/modules/s/hooks/post-checkout', 'deep/new/.git', 'vendor/x/.git/config', 'data/realgit/hooks/pre-commit', 'data/realgit']) {
      expect(gitMetadataReason(ws, join(ws, path)), path).toBeDefined();
    }
    for (const path of ['src/a.ts', 'src/new.ts', 'HEAD/notes', '.gitignore', '.github/workflows/ci.yml']) expect(gitMetadataReason(ws, join(ws, path)), path).toBeUndefined();
    const p = policy(ws);
    expect(code(() => checkFileAccess(p, hiddenPathTest(p), join(ws, '.git/hooks/pre-push'), '.git/hooks/pre-push', 'write'))).toBe('sandbox_denied');
    expect(code(() => checkFileAccess(p, hiddenPathTest(p), join(ws, '.git/config'), '.git/config', 'read'))).toBe('allowed');
    const off = policy(ws, { mode: 'off' });
    expect(code(() => checkFileAccess(off, hiddenPathTest(off), join(ws, '.git/config'), '.git/config', 'write'))).toBe('allowed');
  });
});

describe("the host's runtime folders", () => {
  it('covers /run with an empty read-only tmpfs before the workspace is bound, on this host too', () => {
    const ws = workspaceWith('runtime', { 'a.txt': '' });
    const args = argsOf(policy(ws));
    expect(at(args, '--tmpfs', '/run')).toBeGreaterThan(at(args, '--tmpfs', '/tmp'));
    expect(at(args, '--tmpfs', '/run')).toBeLessThan(at(args, '--bind', ws, ws));
    expect(at(args, '--remount-ro', '/run')).toBeGreaterThan(at(args, '--bind', ws, ws));
  });

  it('covers a runtime folder that is a folder, not one that links to another; keeps the files commands need in it', () => {
    const host = workspaceWith('host', { 'run/resolve/stub-resolv.conf': 'nameserver 127.0.0.53\n', 'run/docker.sock': '', 'etc/hosts': '' });
    symlinkSync(join(host, 'run'), join(host, 'varrun'));
    symlinkSync(join(host, 'run/resolve/stub-resolv.conf'), join(host, 'etc/resolv.conf'));
    const mounts = runtimeFolderMounts([join(host, 'run'), join(host, 'varrun'), join(host, 'missing')], [join(host, 'etc/resolv.conf'), join(host, 'etc/hosts')]);
    expect(mounts).toEqual({ covered: [join(host, 'run')], kept: [join(host, 'run/resolve/stub-resolv.conf')] });
  });
});
