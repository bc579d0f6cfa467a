import { existsSync, readdirSync, readFileSync, realpathSync, statSync, type Dirent } from 'node:fs';
import path from 'node:path';

/**
 * Where git keeps what it runs: each repository's `.git` (config with `core.fsmonitor`,
 * `core.hooksPath`, filters and aliases; hooks; `modules/` of submodules; `worktrees/`;
 * `commondir`, `config.worktree`), and the folder a `gitdir:` file names. Under
 * `workspace-write` the sandbox mounts all of it read-only for every repository the scan below
 * finds, and reserves the names a command could otherwise create (see bwrap-argv.ts); the file
 * tools refuse to write it by the same rule (file-access.ts).
 */

/** How many folders one scan reads at most (breadth first: the shallow ones first). */
export const GIT_SCAN_MAX_DIRS = 3_000;

/**
 * Folders never descended into: package trees, which hold most of a workspace's folders and whose
 * nested `.git` (a git dependency's) nobody runs git in. What lies there is still refused to the
 * file tools (by name), not mounted read-only for commands.
 */
const SKIPPED = new Set(['node_modules']);

/** True when `folder` is a git directory under any name: a HEAD file, and objects or commondir. */
export function gitMetadataOf(folder: string): boolean {
  try {
    return statSync(path.join(folder, 'HEAD')).isFile() && (existsSync(path.join(folder, 'objects')) || existsSync(path.join(folder, 'commondir')));
  } catch {
    return false;
  }
}

/** The folder a `gitdir: PATH` file names (relative to the file's folder), real; undefined if none. */
function gitdirOf(file: string): string | undefined {
  try {
    const text = readFileSync(file, 'utf8').slice(0, 4096);
    const named = /^gitdir:\s*(.+?)\s*$/m.exec(text)?.[1];
    return named ? realpathSync(path.resolve(path.dirname(file), named)) : undefined;
  } catch {
    return undefined;
  }
}

/** The folder a git directory's `commondir` names (the main repository's, for a worktree). */
function commondirOf(gitdir: string): string | undefined {
  try {
    const named = readFileSync(path.join(gitdir, 'commondir'), 'utf8').trim();
    return named ? realpathSync(path.resolve(gitdir, named)) : undefined;
  } catch {
    return undefined;
  }
}

/** The submodule paths `.gitmodules` in `repo` lists (`path = sub/dir` lines). */
function submodulePaths(repo: string): string[] {
  try {
    const text = readFileSync(path.join(repo, '.gitmodules'), 'utf8').slice(0, 65_536);
    return [...text.matchAll(/^\s*path\s*=\s*(.+?)\s*$/gm)].map((match) => match[1]!).filter((sub) => !sub.split('/').includes('..'));
  } catch {
    return [];
  }
}

/** What the scan found: paths to mount read-only, names to reserve, whether it stopped early. */
export interface GitMetadata {
  /** Real paths (folders or files) under the workspace, none under another, sorted. */
  readOnly: string[];
  /** Missing `.git` names to reserve: the workspace's own, and each submodule folder's. */
  reserve: string[];
  /** True when the scan met GIT_SCAN_MAX_DIRS before the end of the workspace. */
  truncated: boolean;
}

const isUnder = (child: string, parent: string) => child === parent || child.startsWith(`${parent}/`);

/** What one folder gave the scan, kept while the folder's own mtime and ctime stay the same. */
interface FolderScan {
  mtimeMs: number;
  ctimeMs: number;
  /** Sub-folders to read next. */
  children: string[];
  found: string[];
  reserve: string[];
}

/**
 * Folders already read, by path. A folder whose entries change (one created, removed or renamed
 * in it) gets a new mtime, so a stat tells whether its scan still holds; a folder that holds a
 * `.git` or `.gitmodules` is read again each time (their contents matter, not only their names).
 */
const cache = new Map<string, FolderScan>();
const CACHE_MAX = 50_000;

/** Reads one folder: its git metadata, the names to reserve, the sub-folders to read. */
function scanFolder(folder: string, workspace: string): FolderScan | undefined {
  let entries: Dirent[];
  try {
    entries = readdirSync(folder, { withFileTypes: true });
  } catch {
    return undefined;
  }
  const scan: FolderScan = { mtimeMs: 0, ctimeMs: 0, children: [], found: [], reserve: [] };
  const inWorkspace = (real: string | undefined) => (real !== undefined && isUnder(real, workspace) && real !== workspace ? real : undefined);
  if (folder !== workspace && entries.some((entry) => entry.name === 'HEAD') && gitMetadataOf(folder)) {
    scan.found.push(folder);
    return scan;
  }
  for (const entry of entries) {
    const full = path.join(folder, entry.name);
    if (entry.name === '.git') {
      scan.found.push(full);
      let named: (string | undefined)[] = [];
      if (entry.isFile()) {
        const gitdir = gitdirOf(full);
        named = [gitdir, gitdir && commondirOf(gitdir)];
      } else if (entry.isSymbolicLink()) {
        try {
          named = [realpathSync(full)];
        } catch {
          // a dangling link: the mount on its name is enough
        }
      }
      for (const real of named) if (inWorkspace(real || undefined)) scan.found.push(real!);
      for (const sub of submodulePaths(folder)) {
        const subFolder = path.join(folder, sub);
        if (isUnder(subFolder, folder) && existsSync(subFolder) && !existsSync(path.join(subFolder, '.git'))) scan.reserve.push(path.join(subFolder, '.git'));
      }
    } else if (entry.isDirectory() && !SKIPPED.has(entry.name)) {
      scan.children.push(full);
    }
  }
  return scan;
}

/**
 * Scans `workspace` (its real path) breadth first, at most `maxDirs` folders, for git metadata:
 * `.git` folders, `.git` files and the gitdir (and its commondir) they name when that lies in the
 * workspace, `.git` symlinks' targets, and git directories under other names (a bare repository, a
 * gitdir moved away). Symlinked folders are not followed; folders inside git metadata are not
 * read. A folder unchanged since the last scan costs one stat. Never throws: an unreadable folder
 * is skipped.
 */
export function findGitMetadata(workspace: string, maxDirs = GIT_SCAN_MAX_DIRS): GitMetadata {
  if (cache.size > CACHE_MAX) cache.clear();
  const found = new Set<string>();
  const reserve: string[] = [];
  const queue = [workspace];
  let truncated = false;
  for (let at = 0; at < queue.length; at++) {
    if (at >= maxDirs) {
      truncated = true;
      break;
    }
    const folder = queue[at]!;
    let stat;
    try {
      stat = statSync(folder);
    } catch {
      continue;
    }
    let scan = cache.get(folder);
    if (!scan || scan.mtimeMs !== stat.mtimeMs || scan.ctimeMs !== stat.ctimeMs) {
      scan = scanFolder(folder, workspace);
      if (!scan) continue;
      Object.assign(scan, { mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs });
      if (scan.found.length === 0 && scan.reserve.length === 0) cache.set(folder, scan);
      else cache.delete(folder);
    }
    for (const entry of scan.found) found.add(entry);
    reserve.push(...scan.reserve);
    queue.push(...scan.children);
  }
  const rootGit = path.join(workspace, '.git');
  if (!found.has(rootGit) && !existsSync(rootGit)) reserve.unshift(rootGit);
  const sorted = [...found].sort();
  const readOnly = sorted.filter((entry) => !sorted.some((other) => other !== entry && isUnder(entry, other)));
  return { readOnly, reserve: [...new Set(reserve)], truncated };
}
