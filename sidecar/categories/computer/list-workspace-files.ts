import { opendir } from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { ToolRuntimeError } from '../../../src/index.js';

/** What a glob over the workspace found. */
export interface WorkspaceListing {
  /** Matching file paths relative to the root, sorted. */
  files: string[];
  /** True when the result cap or the walk cap stopped the search early. */
  truncated: boolean;
}

const SKIPPED = new Set(['.git', 'node_modules']);

/**
 * Lists the files under `root` whose relative path matches the glob `pattern` (picomatch, dot files
 * included), without following symlinked folders. `.git` and `node_modules` are skipped unless the
 * pattern names them. Stops after `maxResults` matches or `maxVisited` entries.
 *
 * @throws ToolRuntimeError `invalid_arguments` for an absolute pattern or one with `..`;
 *   `aborted` when `signal` fires during the walk.
 */
export async function listWorkspaceFiles(options: {
  root: string;
  pattern: string;
  signal: AbortSignal;
  maxResults?: number;
  maxVisited?: number;
  /** True for an absolute path the sandbox hides: neither listed nor walked into. */
  isHidden?: (absolute: string) => boolean;
}): Promise<WorkspaceListing> {
  const { root, pattern, signal } = options;
  const maxResults = options.maxResults ?? 1_000;
  const maxVisited = options.maxVisited ?? 100_000;
  if (pattern.startsWith('/') || pattern.split('/').includes('..')) {
    throw new ToolRuntimeError('invalid_arguments', `pattern ${JSON.stringify(pattern)} must be relative to the workspace root, without '..'`);
  }
  const isMatch = picomatch(pattern, { dot: true });
  const scanned = picomatch.scan(pattern);
  const base = scanned.isGlob ? scanned.base : path.posix.dirname(pattern);
  const namesSkipped = (name: string) => SKIPPED.has(name) && !pattern.includes(name);
  const files: string[] = [];
  let visited = 0;
  let truncated = false;
  const queue: string[] = [base === '' || base === '.' ? '' : base];
  while (queue.length > 0) {
    if (signal.aborted) throw new ToolRuntimeError('aborted', 'list_files was aborted');
    const relativeDir = queue.shift()!;
    let dir;
    if (options.isHidden?.(path.join(root, relativeDir))) continue;
    try {
      dir = await opendir(path.join(root, relativeDir));
    } catch {
      continue;
    }
    for await (const entry of dir) {
      visited++;
      const relative = relativeDir === '' ? entry.name : `${relativeDir}/${entry.name}`;
      if (options.isHidden?.(path.join(root, relative))) continue;
      if (entry.isDirectory()) {
        if (!namesSkipped(entry.name)) queue.push(relative);
      } else if (isMatch(relative)) {
        files.push(relative);
      }
      if (files.length >= maxResults || visited >= maxVisited) {
        truncated = true;
        break;
      }
    }
    if (truncated) break;
  }
  files.sort();
  return { files, truncated };
}
