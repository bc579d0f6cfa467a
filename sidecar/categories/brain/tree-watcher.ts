import { watch, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { isIgnoredName } from './scan-pages.js';

/** A recursive folder watcher; `close()` stops every inotify watch it holds. */
export interface TreeWatcher {
  /** Folders watched (relative ids, `''` for the root). */
  readonly folders: number;
  /** Settles once the folders that existed at the start are watched. */
  readonly ready: Promise<void>;
  close(): void;
}

/**
 * Watches `root` and every folder under it (hidden folders and node_modules aside) with one
 * non-recursive `fs.watch` per folder, and calls `onChange` with the id (path relative to `root`)
 * of every entry that was created, changed, renamed or deleted. A new folder is watched as soon as
 * an event names it, and its contents are reported (they may predate the watch); a folder that
 * goes away is unwatched. `onError` hears a watch that could not be set up or failed (inotify
 * limits, for one); the caller's periodic reconcile covers what was missed.
 *
 * Node 20's own `fs.watch(dir, { recursive: true })` on Linux adds an inotify watch per *file* and
 * walks the tree synchronously (10,000 watches and ~190 ms of blocked event loop for a 10,000-page
 * tree), so the folders are watched one by one instead.
 */
export function createTreeWatcher(options: {
  root: string;
  onChange: (id: string) => void;
  onError: (error: Error, folder: string) => void;
}): TreeWatcher {
  const { root, onChange, onError } = options;
  const watchers = new Map<string, FSWatcher>();
  let closed = false;

  const unwatch = (folder: string) => {
    for (const [id, watcher] of watchers) {
      if (id === folder || id.startsWith(`${folder}/`) || folder === '') {
        watcher.close();
        watchers.delete(id);
      }
    }
  };

  /** Watches `folder` and the folders under it; with `report`, reports what they hold. */
  const watchTree = async (folder: string, report: boolean): Promise<void> => {
    if (closed || watchers.has(folder)) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(path.join(root, folder), { persistent: true }, (_event, name) => {
        if (name === null) {
          // The kernel gave no name (an overflowed queue): have the folder looked at whole.
          onChange(folder);
          return;
        }
        const base = String(name);
        if (isIgnoredName(base)) return;
        const id = folder === '' ? base : `${folder}/${base}`;
        onChange(id);
        void stat(path.join(root, id)).then(
          (info) => {
            if (info.isDirectory()) void watchTree(id, true);
          },
          () => unwatch(id),
        );
      });
    } catch (error) {
      onError(error as Error, folder);
      return;
    }
    watcher.on('error', (error) => {
      unwatch(folder);
      onError(error, folder);
    });
    watchers.set(folder, watcher);
    const entries = await readdir(path.join(root, folder), { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (isIgnoredName(entry.name)) continue;
      const id = folder === '' ? entry.name : `${folder}/${entry.name}`;
      if (report) onChange(id);
      if (entry.isDirectory()) await watchTree(id, report);
    }
  };

  const ready = watchTree('', false);
  return {
    ready,
    get folders() {
      return watchers.size;
    },
    close() {
      closed = true;
      unwatch('');
    },
  };
}
