import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

/** A markdown page's stamp: what tells a changed page from an unchanged one. */
export interface PageStamp {
  mtimeMs: number;
  size: number;
}

/** True for a page id (relative path) the Brain indexes: markdown, outside hidden folders and node_modules. */
export function isPagePath(id: string): boolean {
  return /\.(md|markdown)$/i.test(id) && !id.split('/').some(isIgnoredName);
}

/** Hidden entries (`.git`, `.obsidian`) and `node_modules` are never walked or indexed. */
export function isIgnoredName(name: string): boolean {
  return name.startsWith('.') || name === 'node_modules';
}

/**
 * Walks `root`/`under` for markdown pages and stats them, `concurrency` at a time (not one after
 * another), returning their stamps by id (the path relative to `root`, `/`-separated), in path
 * order. Symbolic links and special files are skipped. A folder or file that vanishes during the
 * walk is skipped. Checks `signal` between folders and stat rounds.
 *
 * @throws the signal's reason when it aborts.
 */
export async function scanPages(options: { root: string; under?: string; signal?: AbortSignal; concurrency?: number }): Promise<Map<string, PageStamp>> {
  const { root, signal } = options;
  const concurrency = options.concurrency ?? 32;
  const files: string[] = [];
  let folders = [options.under ?? ''];
  while (folders.length > 0) {
    signal?.throwIfAborted();
    const next: string[] = [];
    const listings = await Promise.all(
      folders.map(async (folder) => ({ folder, entries: await readdir(path.join(root, folder), { withFileTypes: true }).catch(() => []) })),
    );
    for (const { folder, entries } of listings) {
      for (const entry of entries) {
        if (isIgnoredName(entry.name)) continue;
        const id = folder === '' ? entry.name : `${folder}/${entry.name}`;
        if (entry.isDirectory()) next.push(id);
        else if (entry.isFile() && isPagePath(id)) files.push(id);
      }
    }
    folders = next;
  }
  files.sort();
  const stamps = new Array<PageStamp | undefined>(files.length);
  let cursor = 0;
  const worker = async () => {
    while (cursor < files.length) {
      signal?.throwIfAborted();
      const index = cursor++;
      const info = await stat(path.join(root, files[index]!)).catch(() => undefined);
      if (info?.isFile()) stamps[index] = { mtimeMs: info.mtimeMs, size: info.size };
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));
  const found = new Map<string, PageStamp>();
  files.forEach((id, index) => {
    const stamp = stamps[index];
    if (stamp) found.set(id, stamp);
  });
  return found;
}
