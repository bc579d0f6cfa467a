import { opendir } from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { ToolRuntimeError } from '../../../src/index.js';
import type { WorkspaceFiles } from './files/workspace-files.js';

/** What a glob over the workspace found. */
export interface WorkspaceListing {
  /** Matching file paths relative to the root, sorted. */
  files: string[];
  /** True when the result cap or the walk cap stopped the search early. */
  truncated: boolean;
}

const SKIPPED = new Set(['.git', 'node_modules']);

/**
 * Lists the files of the workspace whose relative path matches the glob `pattern` (picomatch, dot
 * files included), following no symlink: each folder is opened from the root's descriptor one
 * component at a time with O_NOFOLLOW (`files.openFolder`), so a folder swapped for a symlink
 * mid-walk is skipped, never listed. Hidden paths (by name, and folders by device and inode) are
 * neither listed nor walked into. `.git` and `node_modules` are skipped unless the pattern names
 * them. Stops after `maxResults` matches or `maxVisited` entries.
 *
 * @throws ToolRuntimeError `invalid_arguments` for an absolute pattern or one with `..`;
 *   `aborted` when `signal` fires during the walk.
 */
export async function listWorkspaceFiles(options: {
  files: WorkspaceFiles;
  pattern: string;
  signal: AbortSignal;
  maxResults?: number;
  maxVisited?: number;
}): Promise<WorkspaceListing> {
  const { files, pattern, signal } = options;
  const maxResults = options.maxResults ?? 1_000;
  const maxVisited = options.maxVisited ?? 100_000;
  if (pattern.startsWith('/') || pattern.split('/').includes('..')) {
    throw new ToolRuntimeError('invalid_arguments', `pattern ${JSON.stringify(pattern)} must be relative to the workspace root, without '..'`);
  }
  const isMatch = picomatch(pattern, { dot: true });
  const scanned = picomatch.scan(pattern);
  const base = scanned.isGlob ? scanned.base : path.posix.dirname(pattern);
  const namesSkipped = (name: string) => SKIPPED.has(name) && !pattern.includes(name);
  const found: string[] = [];
  let visited = 0;
  let truncated = false;
  const root = (await files.resolve('.', signal)).absolute;
  const queue: string[] = [base === '' || base === '.' ? '' : base];
  while (queue.length > 0) {
    if (signal.aborted) throw new ToolRuntimeError('aborted', 'list_files was aborted');
    const relativeDir = queue.shift()!;
    const folder = await files.openFolder(relativeDir === '' ? [] : relativeDir.split('/'));
    if (!folder) continue;
    if (files.isHidden(path.join(root, relativeDir))) {
      await folder.close();
      continue;
    }
    let dir;
    try {
      dir = await opendir(`/proc/self/fd/${folder.handle.fd}`);
    } catch {
      await folder.close();
      continue;
    }
    await folder.close();
    for await (const entry of dir) {
      visited++;
      const relative = relativeDir === '' ? entry.name : `${relativeDir}/${entry.name}`;
      if (files.isHidden(path.join(root, relative))) continue;
      if (entry.isDirectory()) {
        if (!namesSkipped(entry.name)) queue.push(relative);
      } else if (isMatch(relative)) {
        found.push(relative);
      }
      if (found.length >= maxResults || visited >= maxVisited) {
        truncated = true;
        break;
      }
    }
    if (truncated) break;
  }
  found.sort();
  return { files: found, truncated };
}
