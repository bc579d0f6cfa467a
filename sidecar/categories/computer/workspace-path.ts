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

function refuse(given: string, why: string): ToolRuntimeError {
  return new ToolRuntimeError('invalid_arguments', `path ${JSON.stringify(given)} ${why}; paths are relative to the workspace root and must stay inside it`);
}

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * Resolves a path the model gave (relative to the workspace root, or absolute inside it) and checks
 * that it stays inside the workspace: lexically (`..`, absolute paths elsewhere) and physically (the
 * real path of the nearest existing ancestor, so a symlink that leads out is refused, for reads and
 * for writes of files that do not exist yet). A dangling symlink is refused too, since writing
 * through it would create its target wherever it points.
 *
 * @throws ToolRuntimeError `invalid_arguments` with a message that says why the path is refused.
 */
export async function resolveWorkspacePath(workspace: string, given: string): Promise<WorkspacePath> {
  if (typeof given !== 'string' || given.trim() === '') throw refuse(String(given), 'is empty');
  if (given.includes('\0')) throw refuse(given, 'contains a NUL byte');
  const root = path.resolve(workspace);
  const lexical = path.resolve(root, given);
  if (!isInside(root, lexical)) {
    throw refuse(given, path.isAbsolute(given) ? 'is an absolute path outside the workspace' : 'leads out of the workspace (`..`)');
  }
  const realRoot = await realpath(root);
  const rest: string[] = [];
  let existing = lexical;
  for (;;) {
    try {
      const real = await realpath(existing);
      if (!isInside(realRoot, real)) throw refuse(given, 'goes through a symbolic link that leads out of the workspace');
      const absolute = rest.length === 0 ? real : path.join(real, ...rest.reverse());
      const relative = path.relative(realRoot, absolute).split(path.sep).join('/') || '.';
      return { absolute, relative };
    } catch (error) {
      if (error instanceof ToolRuntimeError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      const link = await lstat(existing).catch(() => undefined);
      if (link?.isSymbolicLink()) throw refuse(given, 'goes through a symbolic link whose target does not exist');
      const parent = path.dirname(existing);
      if (parent === existing) throw refuse(given, 'has no existing ancestor');
      rest.push(path.basename(existing));
      existing = parent;
    }
  }
}
