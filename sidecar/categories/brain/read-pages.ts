import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { PageWrite } from './brain-store.js';
import type { PageStamp } from './scan-pages.js';

/** A page's title: front matter `title:`, else the first `# heading`, else the file name. */
export function pageTitle(id: string, content: string): string {
  const frontMatter = content.startsWith('---') ? content.slice(0, content.indexOf('\n---', 3) + 1) : '';
  return (
    /^title:\s*(.+)$/m.exec(frontMatter)?.[1]?.trim() ||
    /^#\s+(.+)$/m.exec(content.slice(0, 64 * 1024))?.[1]?.trim() ||
    path.basename(id, path.extname(id))
  );
}

/**
 * Reads pages under `root`, `concurrency` at a time, into rows to write: the text (cut at
 * `maxPageBytes`, marked `truncated`), the title and the stamp the scan saw. A page that vanished
 * since the scan is left out (the watcher or the next rescan settles it).
 */
export async function readPages(options: { root: string; entries: Array<[string, PageStamp]>; maxPageBytes: number; concurrency: number }): Promise<PageWrite[]> {
  const { root, entries, maxPageBytes } = options;
  const out: Array<PageWrite | undefined> = new Array(entries.length);
  let cursor = 0;
  const reader = async () => {
    while (cursor < entries.length) {
      const index = cursor++;
      const [id, stamp] = entries[index]!;
      const bytes = await readFile(path.join(root, id)).catch(() => undefined);
      if (!bytes) continue;
      const truncated = bytes.length > maxPageBytes;
      // A cut through a multi-byte character leaves a replacement character at the end: drop it.
      const content = (truncated ? bytes.subarray(0, maxPageBytes) : bytes).toString('utf8').replace(/\uFFFD$/, '');
      out[index] = { path: id, ...stamp, bytes: Math.min(bytes.length, maxPageBytes), truncated, title: pageTitle(id, content), content };
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, entries.length) }, reader));
  return out.filter((page): page is PageWrite => page !== undefined);
}
