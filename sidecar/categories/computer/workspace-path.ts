import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { ToolRuntimeError } from '../../../src/index.js';

/** A path the model gave, resolved inside the workspace. */
export interface WorkspacePath {
  /** The absolute path, through the workspace's real (symlink-free) location. */
  absolute: string;
  /** The path relative to the workspace root, with `/` separators (`.` for the root). */
  relative: string;
}

/** Linux's PATH_MAX: a path of this many bytes or more (its NUL included) is refused by the kernel. */
export const PATH_MAX_BYTES = 4096;
/** Linux's NAME_MAX: the longest name one path component may have, in bytes. */
export const NAME_MAX_BYTES = 255;

/** How much of a refused path a message quotes: long paths are the fault, not the explanation. */
const QUOTED_CHARS = 120;

function quote(given: string): string {
  return given.length <= QUOTED_CHARS
    ? JSON.stringify(given)
    : `${JSON.stringify(given.slice(0, QUOTED_CHARS))}… (${given.length} characters)`;
}

function refuse(given: string, why: string): ToolRuntimeError {
  return new ToolRuntimeError('invalid_arguments', `path ${quote(given)} ${why}; paths are relative to the workspace root and must stay inside it`);
}

/** True when `candidate` is `root` or below it. Only a `..` segment leads out: `..notes` is a name. */
function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  if (relative === '') return true;
  if (path.isAbsolute(relative)) return false;
  return relative !== '..' && !relative.startsWith(`..${path.sep}`);
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ToolRuntimeError('aborted', 'the call was aborted while its path was being checked');
}

const errnoCode = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

/**
 * The lexical half of the path check, with no file system access: refuses an empty path, one over
 * the system's limits (PATH_MAX 4096 bytes, NAME_MAX 255 bytes per component), a NUL byte, `..`
 * that leads out and an absolute path elsewhere. Returns the components below the workspace root
 * (`[]` for the root itself), `..` and `.` already folded.
 *
 * @throws ToolRuntimeError `invalid_arguments` saying why (quoting at most a short prefix).
 */
export function splitWorkspacePath(workspace: string, given: string): string[] {
  if (typeof given !== 'string' || given.trim() === '') throw refuse(String(given), 'is empty');
  if (given.length >= PATH_MAX_BYTES || Buffer.byteLength(given) >= PATH_MAX_BYTES) {
    throw refuse(given, `is ${Buffer.byteLength(given)} bytes long, over the system's limit of ${PATH_MAX_BYTES - 1} bytes (PATH_MAX ${PATH_MAX_BYTES})`);
  }
  if (given.includes('\0')) throw refuse(given, 'contains a NUL byte');
  for (const part of given.split('/')) {
    if (Buffer.byteLength(part) > NAME_MAX_BYTES) {
      throw refuse(given, `has a name of ${Buffer.byteLength(part)} bytes (${quote(part)}), over the system's limit of ${NAME_MAX_BYTES} (NAME_MAX)`);
    }
  }
  const root = path.resolve(workspace);
  const lexical = path.resolve(root, given);
  if (!isInside(root, lexical)) {
    throw refuse(given, path.isAbsolute(given) ? 'is an absolute path outside the workspace' : 'leads out of the workspace (`..`)');
  }
  return path.relative(root, lexical).split(path.sep).filter((part) => part !== '');
}

/**
 * Resolves a path the model gave (relative to the workspace root, or absolute inside it) and checks
 * that it stays inside the workspace: lexically (`..` segments, absolute paths elsewhere) and
 * physically, so a symlink that leads out is refused, for reads and for writes of files that do not
 * exist yet. A dangling (or looping) symlink is refused too, since writing through it would create
 * its target wherever it points. This checks names: the file tools open through
 * files/workspace-files.ts instead, which cannot be raced; this serves a command's `cwd`, which the
 * sandbox confines anyway.
 *
 * Paths over the system's limits (PATH_MAX 4096 bytes, NAME_MAX 255 bytes per component) are
 * refused before any file system access. The physical check walks forward from the real root, one
 * `lstat` per existing component and a `realpath` only at a symlink, and stops at the first
 * component that does not exist: linear in the path's length.
 *
 * @param options.signal the call's signal: checked between steps; once aborted, the walk stops.
 * @throws ToolRuntimeError `invalid_arguments` saying why the path is refused (quoting at most a
 *   short prefix of it); `aborted` when `signal` fired.
 */
export async function resolveWorkspacePath(workspace: string, given: string, options: { signal?: AbortSignal } = {}): Promise<WorkspacePath> {
  const { signal } = options;
  checkAborted(signal);
  const parts = splitWorkspacePath(workspace, given);
  const root = path.resolve(workspace);
  const realRoot = await realpath(root);
  checkAborted(signal);
  let current = realRoot;
  let index = 0;
  for (; index < parts.length; index++) {
    checkAborted(signal);
    const next = path.join(current, parts[index]!);
    let info;
    try {
      info = await lstat(next);
    } catch (error) {
      const code = errnoCode(error);
      // Nothing exists from here on: the rest of the path is kept as given.
      if (code === 'ENOENT' || code === 'ENOTDIR') break;
      throw error;
    }
    if (info.isSymbolicLink()) {
      let target: string;
      try {
        target = await realpath(next);
      } catch (error) {
        const code = errnoCode(error);
        if (code === 'ENOENT' || code === 'ENOTDIR') throw refuse(given, 'goes through a symbolic link whose target does not exist');
        if (code === 'ELOOP') throw refuse(given, 'goes through a loop of symbolic links');
        throw error;
      }
      if (!isInside(realRoot, target)) throw refuse(given, 'goes through a symbolic link that leads out of the workspace');
      current = target;
    } else {
      current = next;
      // Below a file nothing can exist: stop here, the tool's own access fails with a clear error.
      if (!info.isDirectory()) {
        index++;
        break;
      }
    }
  }
  const absolute = index < parts.length ? path.join(current, ...parts.slice(index)) : current;
  if (Buffer.byteLength(absolute) >= PATH_MAX_BYTES) {
    throw refuse(given, `resolves to ${Buffer.byteLength(absolute)} bytes inside the workspace, over the system's limit of ${PATH_MAX_BYTES - 1} bytes (PATH_MAX)`);
  }
  const relative = path.relative(realRoot, absolute).split(path.sep).join('/') || '.';
  return { absolute, relative };
}
