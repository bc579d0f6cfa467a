import { lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { ToolRuntimeError } from '../../../../src/errors.js';
import { gitMetadataOf } from './git-metadata.js';
import type { SandboxPolicy } from './sandbox-policy.js';

/**
 * The one rule for what the sandbox hides and protects, used by both sides: bwrap-argv.ts turns it
 * into mounts for commands, and the file tools call checkFileAccess. Hidden: the `--hide` paths,
 * the sidecar's secrets and every sidecar's state (see sandbox-policy.ts), by name and by device
 * and inode. Protected (never written under `workspace-write`): git metadata at any depth (see
 * git-metadata.ts).
 */

/** True when `child` is `parent` or lies under it (both absolute, normalized). */
export const isUnder = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);

/** The real path of `given`, or `given` resolved as a path when it does not exist. */
export const realOrResolved = (given: string) => {
  try {
    return realpathSync(given);
  } catch {
    return path.resolve(given);
  }
};

/** A hidden path as it is now: where it really is, whether a folder, its identity. */
export interface HiddenEntry {
  given: string;
  real: string;
  dir: boolean;
  dev: number;
  ino: number;
}

/** What each hidden path was when the sidecar last looked (given path → identity), process-wide. */
const seen = new Map<string, { dev: number; ino: number; dir: boolean; real?: string }>();

/**
 * The hidden roots of `policy`: its `hide` list, where a root that holds the workspace (the state
 * root when a workspace lives in it) is replaced by its other entries, level by level, so hiding
 * never hides the workspace itself.
 */
function hiddenRoots(policy: SandboxPolicy): string[] {
  const workspace = realOrResolved(policy.workspace);
  const roots: string[] = [];
  const add = (given: string): void => {
    const real = realOrResolved(given);
    if (!isUnder(workspace, real)) {
      roots.push(given);
      return;
    }
    if (real === workspace) return;
    let entries: string[] = [];
    try {
      entries = readdirSync(real);
    } catch {
      return;
    }
    for (const entry of entries) add(path.join(real, entry));
  };
  for (const given of policy.hide) add(path.resolve(given));
  return roots;
}

const vanished = (given: string, what: string) =>
  new ToolRuntimeError(
    'sandbox_unavailable',
    `nothing was run: the hidden path ${given} ${what} since the sidecar first hid it, so what it held may now be readable under another name. Fix: put it back where it was, or restart the sidecar to take the workspace as it is now.`,
  );

/**
 * Resolves every hidden path now (at each sandbox start, so a path created or rotated since is
 * hidden from the next command). Fails closed for what a command or a file tool could have moved:
 * a hidden path under the workspace that existed before and is gone, a hidden folder under it
 * replaced by another (a rename of it, or of a parent, then a new one in its place), or one whose
 * real path changed (a symlink re-pointed). A file rewritten in place or by rename at the same
 * path is taken as it is now (an editor's save). Outside the
 * workspace nothing sandboxed can rename a path; a file there that went or changed is the
 * operator's doing (a token handed over then removed, a secret rotated by rename) and is taken as
 * it is now.
 *
 * @throws ToolRuntimeError `sandbox_unavailable` naming the path and the fix.
 */
export function resolveHiddenPaths(policy: SandboxPolicy): HiddenEntry[] {
  const workspace = realOrResolved(policy.workspace);
  const entries: HiddenEntry[] = [];
  for (const given of hiddenRoots(policy)) {
    const before = seen.get(given);
    let entry: HiddenEntry | undefined;
    try {
      const real = realpathSync(given);
      const stat = statSync(real);
      entry = { given, real, dir: stat.isDirectory(), dev: stat.dev, ino: stat.ino };
    } catch {
      // does not exist (now)
    }
    const inWorkspace = isUnder(realOrResolved(given), workspace) || isUnder(path.resolve(given), workspace);
    if (!entry) {
      if (before && inWorkspace) throw vanished(given, 'has gone (renamed or deleted)');
      continue;
    }
    if (before && inWorkspace && before.dir && (before.dev !== entry.dev || before.ino !== entry.ino)) throw vanished(given, 'was replaced by another folder');
    // A symlink re-pointed (or a parent swapped for one): the old target would be left unmasked.
    if (before?.real && inWorkspace && before.real !== entry.real) throw vanished(given, `now leads to ${entry.real}, not ${before.real}`);
    seen.set(given, { dev: entry.dev, ino: entry.ino, dir: entry.dir, real: entry.real });
    entries.push(entry);
  }
  return entries;
}

/** The file tools' hidden test: by name, and `byInode` for what a file call opened or walked through. */
export type HiddenPathTest = ((absolute: string) => boolean) & {
  /** True for the device and inode of a hidden path (as it is now, or as it was when first seen). */
  byInode(stat: { dev: number; ino: number }): boolean;
  /** True at or under one of the readable exceptions, by name (they win over the identity test). */
  readable(absolute: string): boolean;
};

/**
 * A test on absolute paths (real, as resolveWorkspacePath gives them): true for a path the policy
 * hides (at or under a hidden path, by its given or its real name, and not under one of its
 * readable exceptions). `byInode` compares identities, so a hidden file or folder reached under
 * another name (a hard link, a renamed parent) is still hidden; checkFileAccess uses it on the
 * path and each folder above it. Made once per turn; the names are resolved again when a path in
 * them is created later only by name (the identities are those seen so far).
 */
export function hiddenPathTest(policy: SandboxPolicy): HiddenPathTest {
  const roots = hiddenRoots(policy);
  const names = [...new Set(roots.flatMap((given) => [given, realOrResolved(given)]))];
  const readable = policy.readable.map(realOrResolved);
  const identities = new Set<string>();
  const refresh = () => {
    for (const given of roots) {
      const known = seen.get(given);
      if (known) identities.add(`${known.dev}:${known.ino}`);
      try {
        const stat = statSync(given);
        identities.add(`${stat.dev}:${stat.ino}`);
        // First sight (no command yet): what a later rename is compared with.
        if (!known) seen.set(given, { dev: stat.dev, ino: stat.ino, dir: stat.isDirectory() });
      } catch {
        // not there now
      }
    }
  };
  refresh();
  const test = ((absolute: string) => names.some((root) => isUnder(absolute, root)) && !test.readable(absolute)) as HiddenPathTest;
  test.byInode = (stat) => identities.size > 0 && identities.has(`${stat.dev}:${stat.ino}`);
  test.readable = (absolute) => readable.some((root) => isUnder(absolute, root));
  return test;
}

/**
 * Why `absolute` (in the workspace) is git metadata a file tool must not write, or undefined: a
 * path with a `.git` component at any depth (a repository's folder, a `gitdir:` file, a
 * submodule's `.git/modules/...`, a nested checkout's), or a path inside a folder that is a git
 * directory under another name (HEAD and objects or commondir: a folder a `gitdir:` file names, a
 * bare repository, a worktree's folder). Commands meet the same line as read-only mounts.
 */
export function gitMetadataReason(workspace: string, absolute: string): string | undefined {
  const root = realOrResolved(workspace);
  if (!isUnder(absolute, root)) return undefined;
  const parts = path.relative(root, absolute).split(path.sep);
  if (parts.includes('.git')) return 'is git metadata (a .git folder or file): git outside the sandbox would run what is written there (hooks, core.fsmonitor)';
  // Below the workspace only, as the scan (a workspace that is itself a bare repository is the work).
  for (let folder = absolute; folder !== root && isUnder(folder, root); folder = path.dirname(folder)) {
    if (gitMetadataOf(folder)) return `is inside ${path.relative(root, folder)}, a git directory: git outside the sandbox would run what is written there (hooks, core.fsmonitor)`;
  }
  return undefined;
}

/** Folders from `absolute` up to `workspace` (inclusive) whose identity is hidden: the first found. */
function hiddenByInode(isHidden: HiddenPathTest, workspace: string, absolute: string): boolean {
  for (let at = absolute; isUnder(at, workspace); at = path.dirname(at)) {
    if (isHidden.readable(at)) return false;
    try {
      if (isHidden.byInode(lstatSync(at))) return true;
    } catch {
      // not there (a file to be created)
    }
    if (at === workspace) break;
  }
  return false;
}

/**
 * The file tools' side of the sandbox: the same rules the commands are held to, checked on a path
 * already resolved inside the workspace. A hidden path (by name, or by the device and inode of the
 * path or a folder above it) is neither read nor written; under `read-only` nothing is written;
 * under `workspace-write` git metadata is not written (see gitMetadataReason).
 *
 * @throws ToolRuntimeError `sandbox_denied` saying which rule refused.
 */
export function checkFileAccess(policy: SandboxPolicy, isHidden: (absolute: string) => boolean, absolute: string, shown: string, access: 'read' | 'write'): void {
  const workspace = realOrResolved(policy.workspace);
  const byInode = 'byInode' in isHidden && hiddenByInode(isHidden as HiddenPathTest, workspace, absolute);
  if (isHidden(absolute) || byInode) throw new ToolRuntimeError('sandbox_denied', `${shown} is hidden by the sidecar's sandbox (it holds the sidecar's secrets or state); it cannot be read or written`);
  if (access === 'read') return;
  if (policy.mode === 'read-only') throw new ToolRuntimeError('sandbox_denied', `the sidecar's sandbox is read-only (--sandbox read-only): ${shown} cannot be written`);
  if (policy.mode !== 'workspace-write') return;
  const git = gitMetadataReason(workspace, absolute);
  if (git) throw new ToolRuntimeError('sandbox_denied', `${shown} ${git}; the sandbox keeps it read-only (a person can change it outside the sandbox)`);
}
