import { constants, type Stats } from 'node:fs';
import { lstat, open, readlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolRuntimeError } from '../../../../src/index.js';

/**
 * The one safe way this sidecar reaches a file of the workspace. The file tools run outside the
 * sandbox, so a name that is checked and then opened again could be swapped for a symlink in
 * between (a command can swap it thousands of times a second). Node has no openat, so each step
 * opens `/proc/self/fd/<dirfd>/<name>`: the magic link pins the directory already opened, and
 * O_NOFOLLOW applies to `name` alone. A symlink met on the way is read (never followed by the
 * kernel) and resolved here, inside the workspace only.
 */

const O_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** Symlinks followed in one walk at most (the kernel's own limit, MAXSYMLINKS). */
const MAX_LINK_HOPS = 40;

/** The path of `name` inside the directory open as `fd`, resolved by the kernel without a name for the directory. */
export const procPath = (fd: number, name: string): string => `/proc/self/fd/${fd}/${name}`;

/** A device and inode: what a file is, whatever its name is now. */
export interface FileIdentity {
  dev: number;
  ino: number;
}

export const sameIdentity = (a: FileIdentity, b: FileIdentity): boolean => a.dev === b.dev && a.ino === b.ino;

/** The workspace root, opened once per call. */
export interface OpenRoot {
  handle: FileHandle;
  /** Its real path, as the kernel names the opened directory. */
  real: string;
  /** The workspace as configured (maybe through a symlink): absolute symlink targets may name either. */
  configured: string;
}

/** Where a walk stopped: the deepest directory it opened and what is left below it. */
export interface Walked {
  /** Opened directories from the root (index 0, not owned) to the target's parent (last). */
  stack: FileHandle[];
  /** The target's parent, open. */
  parent: FileHandle;
  /** Components left below `parent`: `[leaf]` when every folder exists, more when some do not, `[]` for the root. */
  rest: string[];
  /** True when `rest` starts inside a symlink's target: the link dangles (its target does not exist). */
  dangling: boolean;
  /** True when a directory on the way is one of `hidden` (by device and inode). */
  throughHidden: boolean;
  /** Closes every directory the walk opened (never the root). */
  release(): Promise<void>;
}

const errnoCode = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

/** True when `candidate` is `root` or below it. */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  if (relative === '') return true;
  if (path.isAbsolute(relative)) return false;
  return relative !== '..' && !relative.startsWith(`..${path.sep}`);
}

function refuse(shown: string, why: string): ToolRuntimeError {
  return new ToolRuntimeError('invalid_arguments', `path ${JSON.stringify(shown)} ${why}; paths are relative to the workspace root and must stay inside it`);
}

/**
 * Opens the workspace root (following the operator's own path to it) and names it as the kernel does.
 *
 * @throws ToolRuntimeError `tool_failed` when the workspace cannot be opened.
 */
export async function openRoot(workspace: string): Promise<OpenRoot> {
  let handle: FileHandle;
  try {
    handle = await open(workspace, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (error) {
    throw new ToolRuntimeError('tool_failed', `the workspace ${workspace} cannot be opened: ${(error as Error).message}`, { cause: error });
  }
  const real = await readlink(`/proc/self/fd/${handle.fd}`);
  return { handle, real, configured: path.resolve(workspace) };
}

/** The real path of an open file or directory, as the kernel names it now. */
export async function realPathOf(handle: FileHandle): Promise<string> {
  const named = await readlink(`/proc/self/fd/${handle.fd}`);
  // A directory removed while open reads "… (deleted)": nothing can be created in it anyway.
  return named.endsWith(' (deleted)') ? named.slice(0, -' (deleted)'.length) : named;
}

/**
 * Walks `parts` (relative to the root, already checked lexically) one component at a time from the
 * root's descriptor. `..` pops to the directory opened before (never above the root); a symlink is
 * read and its target walked in its place when it stays inside the workspace, and refused when it
 * leads out, loops or (`followLeaf`) names the target itself. Stops at the first component that does
 * not exist. Never follows a link by name and never opens anything but directories.
 *
 * @param options.followLeaf resolve the last component too when it is a symlink (else it is left in `rest`).
 * @param options.hidden identities of hidden directories: passing through one sets `throughHidden`.
 * @throws ToolRuntimeError `invalid_arguments` for a link out of the workspace, a link loop, or a
 *   file where a folder should be; `aborted` when `signal` fired.
 */
export async function walkWorkspace(
  root: OpenRoot,
  parts: string[],
  options: { shown: string; followLeaf: boolean; hidden?: FileIdentity[]; signal?: AbortSignal },
): Promise<Walked> {
  const { shown, hidden = [] } = options;
  const stack: FileHandle[] = [root.handle];
  const release = async () => {
    const owned = stack.splice(1);
    await Promise.all(owned.map((handle) => handle.close().catch(() => undefined)));
  };
  const queue = [...parts];
  let hops = 0;
  let viaLink = false;
  // How many components followed the last symlink met: a walk that stops with more left than
  // that stopped inside the link's own target.
  let afterLastLink = Number.POSITIVE_INFINITY;
  const done = (rest: string[]): Walked => ({ stack, parent: top(), rest, dangling: rest.length > afterLastLink, throughHidden, release });
  let throughHidden = false;
  const top = () => stack[stack.length - 1]!;
  const follow = async (name: string) => {
    if (++hops > MAX_LINK_HOPS) throw refuse(shown, 'goes through a loop of symbolic links, or keeps changing while it is opened');
    let target: string;
    try {
      target = await readlink(procPath(top().fd, name));
    } catch (error) {
      const code = errnoCode(error);
      // No longer a link (swapped back since we looked): walk the name again; gone: the same.
      if (code === 'EINVAL' || code === 'ENOENT') {
        queue.unshift(name);
        return;
      }
      throw error;
    }
    viaLink = true;
    afterLastLink = queue.length;
    if (path.isAbsolute(target)) {
      const base = isInside(root.real, target) ? root.real : isInside(root.configured, target) ? root.configured : undefined;
      if (base === undefined) throw refuse(shown, 'goes through a symbolic link that leads out of the workspace');
      for (const handle of stack.splice(1)) await handle.close().catch(() => undefined);
      queue.unshift(...path.relative(base, target).split('/'));
    } else {
      queue.unshift(...target.split('/'));
    }
  };
  try {
    while (queue.length > 0) {
      if (options.signal?.aborted) throw new ToolRuntimeError('aborted', 'the call was aborted while its path was being opened');
      const name = queue.shift()!;
      if (name === '' || name === '.') continue;
      if (name === '..') {
        if (stack.length === 1) throw refuse(shown, viaLink ? 'goes through a symbolic link that leads out of the workspace' : 'leads out of the workspace (`..`)');
        await stack.pop()!.close().catch(() => undefined);
        continue;
      }
      const isLeaf = queue.length === 0;
      if (isLeaf) {
        if (!options.followLeaf) return done([name]);
        let info: Stats;
        try {
          info = await lstat(procPath(top().fd, name));
        } catch (error) {
          if (errnoCode(error) === 'ENOENT') return done([name]);
          throw error;
        }
        if (info.isSymbolicLink()) {
          await follow(name);
          continue;
        }
        return done([name]);
      }
      let handle: FileHandle;
      try {
        handle = await open(procPath(top().fd, name), O_DIR);
      } catch (error) {
        const code = errnoCode(error);
        if (code === 'ENOENT') return done([name, ...queue]);
        if (code !== 'ENOTDIR' && code !== 'ELOOP') throw error;
        // O_DIRECTORY|O_NOFOLLOW fails alike on a file and on a symlink: look at which it is.
        const info = await lstat(procPath(top().fd, name)).catch(() => undefined);
        if (info === undefined) return done([name, ...queue]);
        if (info.isSymbolicLink()) {
          await follow(name);
          continue;
        }
        if (info.isDirectory()) {
          // Swapped back between the open and the look: walk this name again.
          queue.unshift(name);
          if (++hops > MAX_LINK_HOPS) throw refuse(shown, 'keeps changing while it is opened');
          continue;
        }
        throw refuse(shown, `has ${JSON.stringify(name)}, which is not a folder, where a folder should be`);
      }
      stack.push(handle);
      if (hidden.length > 0) {
        const info = await handle.stat();
        if (hidden.some((identity) => sameIdentity(identity, info))) throughHidden = true;
      }
    }
    return done([]);
  } catch (error) {
    await release();
    throw error;
  }
}
