import { constants, statSync, type Stats } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolRuntimeError } from '../../../../src/index.js';
import { checkFileAccess, hiddenPathTest } from '../sandbox/file-access.js';
import type { SandboxPolicy } from '../sandbox/sandbox-policy.js';
import { splitWorkspacePath } from '../workspace-path.js';
import { commitChanges, type FileChange, type CommittedChange } from './commit-changes.js';
import { isInside, openRoot, procPath, realPathOf, sameIdentity, walkWorkspace, type FileIdentity, type OpenRoot, type Walked } from './walk-workspace.js';

export type { FileChange, CommittedChange } from './commit-changes.js';
export type { FileIdentity } from './walk-workspace.js';

/** A workspace file read through its descriptor. */
export interface ReadWorkspaceFile {
  /** Relative to the workspace's real root, `/`-separated (after in-workspace symlinks). */
  relative: string;
  /** The real path the rule checked. */
  absolute: string;
  /** False when the file does not exist (only with `missingOk`); the other fields are then empty. */
  exists: boolean;
  /** At most `maxBytes` bytes. */
  bytes: Buffer;
  /** The size fstat gave when it was opened. */
  size: number;
  /** True when the file grew past `maxBytes` while it was read: `bytes` holds the first `maxBytes`. */
  cut: boolean;
  identity: FileIdentity;
  /** Permission bits (`mode & 0o777`). */
  mode: number;
}

/** Safe file I/O inside one workspace, held to one sandbox policy. See createWorkspaceFiles. */
export interface WorkspaceFiles {
  /**
   * Reads a regular file through one descriptor opened by the safe walk: never more than
   * `maxBytes` (+1 to see a growing file) whatever its size says; FIFOs, sockets and devices are
   * refused before any read (opened O_NONBLOCK, so nothing waits).
   *
   * @param options.access `write` when the caller means to write the file back (the rule is checked for writing).
   * @param options.whole refuse a file over `maxBytes` (or one that grows past it) instead of cutting it.
   * @throws ToolRuntimeError `tool_failed` (missing, a folder, not a regular file, over the cap),
   *   `invalid_arguments` (path), `sandbox_denied` (hidden, protected, read-only), `aborted`.
   */
  read(given: string, options: { access: 'read' | 'write'; maxBytes: number; signal: AbortSignal; whole?: boolean; missingOk?: boolean }): Promise<ReadWorkspaceFile>;
  /**
   * Writes and deletes files all or nothing: see commitChanges.
   *
   * @throws ToolRuntimeError as `read`, and `tool_failed` when a file changed since it was read.
   */
  commit(changes: FileChange[], signal: AbortSignal): Promise<CommittedChange[]>;
  /** Opens a folder of the workspace for listing, following no symlink at all; undefined when it cannot be. */
  openFolder(parts: string[]): Promise<{ handle: FileHandle; close(): Promise<void> } | undefined>;
  /** Checks `given` for reading and names it (for messages and listings). */
  resolve(given: string, signal: AbortSignal): Promise<{ relative: string; absolute: string }>;
  /** True for a real path the policy hides (by name). */
  isHidden(absolute: string): boolean;
}

const fail = (message: string) => new ToolRuntimeError('tool_failed', message);
const errnoCode = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;
const O_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
/** Bytes read per step: the signal is checked between steps. */
const READ_CHUNK = 1024 * 1024;
/** Walks of one path at most while it keeps being swapped under us. */
const MAX_ATTEMPTS = 4;

function kindOf(info: Stats): string {
  if (info.isFIFO()) return 'a FIFO (named pipe)';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** Reads at most `maxBytes + 1` bytes from an open regular file, checking `signal` between chunks. */
async function readBounded(handle: FileHandle, maxBytes: number, signal: AbortSignal): Promise<{ bytes: Buffer; cut: boolean }> {
  const chunks: Buffer[] = [];
  let total = 0;
  while (total <= maxBytes) {
    if (signal.aborted) throw new ToolRuntimeError('aborted', 'the read was aborted');
    const want = Math.min(READ_CHUNK, maxBytes + 1 - total);
    const buffer = Buffer.allocUnsafe(want);
    const { bytesRead } = await handle.read(buffer, 0, want, total);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
  }
  const bytes = Buffer.concat(chunks, total);
  return total > maxBytes ? { bytes: bytes.subarray(0, maxBytes), cut: true } : { bytes, cut: false };
}

/**
 * Safe file I/O for the tools that run outside the sandbox (read_file, write_file, edit_file,
 * apply_patch, list_files): every path is walked from a descriptor of the workspace root without
 * following a symlink by name (walkWorkspace), checked against the sandbox's rule
 * (checkFileAccess) with the real path of what was opened, and read or written through that
 * descriptor only. Hidden paths are also recognised by device and inode, so renaming a hidden file
 * or its folder inside the workspace does not reveal it.
 */
export function createWorkspaceFiles(options: { workspace: string; policy: SandboxPolicy }): WorkspaceFiles {
  const { workspace, policy } = options;
  const isHidden = hiddenPathTest(policy);
  const hiddenReal: string[] = [];
  const hidden: FileIdentity[] = [];
  for (const given of policy.hide) {
    try {
      const info = statSync(given);
      hidden.push({ dev: info.dev, ino: info.ino });
    } catch {
      // A hidden path that does not exist cannot be opened by its identity either.
    }
    hiddenReal.push(path.resolve(given));
  }
  const underHiddenName = (absolute: string) => hiddenReal.some((root) => isInside(root, absolute)) || isHidden(absolute);

  /** The rule, by the real path and by identity. */
  const check = (walked: Walked, absolute: string, shown: string, access: 'read' | 'write', leaf?: FileIdentity) => {
    const byIdentity = walked.throughHidden || (leaf !== undefined && hidden.some((identity) => sameIdentity(identity, leaf)));
    if (byIdentity && !underHiddenName(absolute)) {
      throw new ToolRuntimeError('sandbox_denied', `${shown} is a hidden file or folder of the sidecar's sandbox under another name (moved or linked); it cannot be read or written`);
    }
    checkFileAccess(policy, isHidden, absolute, shown, access);
  };

  const name = async (root: OpenRoot, walked: Walked) => {
    const absolute = path.join(await realPathOf(walked.parent), ...walked.rest);
    return { absolute, relative: path.relative(root.real, absolute).split(path.sep).join('/') || '.' };
  };

  async function readOnce(root: OpenRoot, given: string, parts: string[], options: Parameters<WorkspaceFiles['read']>[1]): Promise<ReadWorkspaceFile | 'retry'> {
    const walked = await walkWorkspace(root, parts, { shown: given, followLeaf: true, hidden, signal: options.signal });
    let handle: FileHandle | undefined;
    try {
      const { absolute, relative } = await name(root, walked);
      const missing = (): ReadWorkspaceFile => {
        if (!options.missingOk) throw fail(`${relative} does not exist`);
        check(walked, absolute, relative, options.access);
        return { relative, absolute, exists: false, bytes: Buffer.alloc(0), size: 0, cut: false, identity: { dev: 0, ino: 0 }, mode: 0 };
      };
      if (walked.dangling) throw new ToolRuntimeError('invalid_arguments', `path ${JSON.stringify(given)} goes through a symbolic link whose target does not exist`);
      if (walked.rest.length === 0) throw fail(`${given} is the workspace folder; use list_files to see what it holds`);
      if (walked.rest.length > 1) return missing();
      check(walked, absolute, relative, options.access);
      try {
        handle = await open(procPath(walked.parent.fd, walked.rest[0]!), O_READ);
      } catch (error) {
        const code = errnoCode(error);
        if (code === 'ENOENT') return missing();
        if (code === 'ELOOP') return 'retry'; // swapped for a symlink since the walk looked: walk again
        if (code === 'ENXIO') throw fail(`${relative} is a socket, not a regular file; the file tools read and write regular files only`);
        throw fail(`${relative} cannot be opened: ${(error as Error).message}`);
      }
      const info = await handle.stat();
      check(walked, absolute, relative, options.access, info);
      if (info.isDirectory()) throw fail(`${relative} is a directory; use list_files to see what it holds`);
      if (!info.isFile()) throw fail(`${relative} is ${kindOf(info)}, not a regular file; the file tools read and write regular files only`);
      if (info.size > options.maxBytes) {
        throw fail(`${relative} is ${info.size} bytes, over the ${options.maxBytes}-byte cap; use run_command with head, tail or grep`);
      }
      const { bytes, cut } = await readBounded(handle, options.maxBytes, options.signal);
      if (cut && options.whole) throw fail(`${relative} grew past the ${options.maxBytes}-byte cap while it was read; try again when it stops changing`);
      return { relative, absolute, exists: true, bytes, size: info.size, cut, identity: { dev: info.dev, ino: info.ino }, mode: info.mode & 0o777 };
    } finally {
      await handle?.close().catch(() => undefined);
      await walked.release();
    }
  }

  return {
    isHidden,
    async read(given, options) {
      const parts = splitWorkspacePath(workspace, given);
      const root = await openRoot(workspace);
      try {
        for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
          const result = await readOnce(root, given, parts, options);
          if (result !== 'retry') return result;
        }
        throw fail(`${given} keeps being replaced by a symbolic link while it is opened; try again when it stops changing`);
      } finally {
        await root.handle.close().catch(() => undefined);
      }
    },
    async commit(changes, signal) {
      const root = await openRoot(workspace);
      try {
        return await commitChanges({
          root,
          changes,
          signal,
          walk: (given: string) => walkWorkspace(root, splitWorkspacePath(workspace, given), { shown: given, followLeaf: true, hidden, signal }),
          name: (walked: Walked) => name(root, walked),
          check: (walked, absolute, shown, leaf) => check(walked, absolute, shown, 'write', leaf),
        });
      } finally {
        await root.handle.close().catch(() => undefined);
      }
    },
    async openFolder(parts) {
      const root = await openRoot(workspace);
      const opened: FileHandle[] = [];
      const closeAll = async () => {
        for (const handle of opened.reverse()) await handle.close().catch(() => undefined);
        await root.handle.close().catch(() => undefined);
      };
      try {
        let current = root.handle;
        for (const part of parts) {
          if (part === '' || part === '.' || part === '..' || part.includes('/')) throw new Error('not a plain name');
          current = await open(procPath(current.fd, part), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
          opened.push(current);
          const info = await current.stat();
          if (hidden.some((identity) => sameIdentity(identity, info))) throw new Error('hidden');
        }
        return { handle: current, close: closeAll };
      } catch {
        await closeAll();
        return undefined;
      }
    },
    async resolve(given, signal) {
      const root = await openRoot(workspace);
      try {
        const walked = await walkWorkspace(root, splitWorkspacePath(workspace, given), { shown: given, followLeaf: true, hidden, signal });
        try {
          const named = await name(root, walked);
          const leaf = walked.rest.length === 1 ? await lstat(procPath(walked.parent.fd, walked.rest[0]!)).catch(() => undefined) : undefined;
          check(walked, named.absolute, named.relative, 'read', leaf);
          return named;
        } finally {
          await walked.release();
        }
      } finally {
        await root.handle.close().catch(() => undefined);
      }
    },
  };
}
