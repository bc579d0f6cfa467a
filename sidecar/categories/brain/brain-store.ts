import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { brainSchemaVersion } from './brain-protocol.js';

/**
 * The Brain database's layout, shared by the writer (the upkeep worker) and the reader (the main
 * thread). `pages` holds one row per indexed page, keyed by an integer id; `pages_fts` is an
 * external-content FTS5 table over `pages` joined by that rowid, so a delete or a lookup goes by key
 * and the page text is stored once. The writer keeps the two in step itself (each page's id is in
 * memory): triggers and an upsert cost about 1.7× the CPU of the same writes made directly.
 */
const schema = `
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    mtime_ms REAL NOT NULL,
    size INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    truncated INTEGER NOT NULL,
    title TEXT NOT NULL,
    content TEXT NOT NULL
  );
  CREATE VIRTUAL TABLE IF NOT EXISTS pages_fts USING fts5(title, content, content = 'pages', content_rowid = 'id', tokenize = 'porter unicode61');
`;

/** What the store remembers of an indexed page, to tell a changed file from an unchanged one. */
export interface StoredPage {
  /** The row id in `pages` and `pages_fts` (0 for a page not written yet). */
  id: number;
  mtimeMs: number;
  size: number;
  /** Bytes of text indexed (at most the page cap). */
  bytes: number;
  truncated: boolean;
}

/** One page to write. */
export interface PageWrite extends Omit<StoredPage, 'id'> {
  path: string;
  title: string;
  content: string;
}

/**
 * The writer's side of the Brain database (better-sqlite3, WAL): creates or upgrades the layout,
 * keeps the indexed pages' stamps in memory, and applies batches of writes and deletes in one
 * transaction each. An index made by another layout version or for another Brain folder is
 * dropped and rebuilt. Synchronous (it runs in the upkeep worker, never on the sidecar's main
 * thread); `close()` closes the database.
 */
export class BrainStore {
  readonly pages = new Map<string, StoredPage>();
  private readonly db: Database.Database;
  private readonly insertPage: Database.Statement;
  private readonly updatePage: Database.Statement;
  private readonly removePage: Database.Statement;
  private readonly oldText: Database.Statement;
  private readonly indexText: Database.Statement;
  private readonly unindexText: Database.Statement;
  private bytes = 0;

  constructor(options: { databasePath: string; brainDir: string }) {
    mkdirSync(path.dirname(options.databasePath), { recursive: true });
    this.db = new Database(options.databasePath);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    // FTS5 merges segments as it goes; a larger page cache than the 2 MB default keeps them in memory.
    this.db.pragma('cache_size = -16384');
    const hasMeta = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get() !== undefined;
    const meta = (key: string) =>
      hasMeta ? (this.db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value : undefined;
    if (meta('schema') !== brainSchemaVersion || meta('brain_dir') !== options.brainDir) {
      // An older layout (or another folder's index): start over rather than guess.
      this.db.exec(`
        DROP TRIGGER IF EXISTS pages_ai; DROP TRIGGER IF EXISTS pages_ad; DROP TRIGGER IF EXISTS pages_au;
        DROP TABLE IF EXISTS pages_fts; DROP TABLE IF EXISTS pages; DROP TABLE IF EXISTS meta;
      `);
      this.db.exec(schema);
      const set = this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
      this.db.transaction(() => {
        set.run('schema', brainSchemaVersion);
        set.run('brain_dir', options.brainDir);
      })();
    }
    for (const row of this.db.prepare('SELECT id, path, mtime_ms, size, bytes, truncated FROM pages').iterate() as IterableIterator<{
      id: number;
      path: string;
      mtime_ms: number;
      size: number;
      bytes: number;
      truncated: number;
    }>) {
      this.pages.set(row.path, { id: row.id, mtimeMs: row.mtime_ms, size: row.size, bytes: row.bytes, truncated: row.truncated === 1 });
      this.bytes += row.bytes;
    }
    this.insertPage = this.db.prepare(
      'INSERT INTO pages (path, mtime_ms, size, bytes, truncated, title, content) VALUES (@path, @mtimeMs, @size, @bytes, @truncated, @title, @content)',
    );
    this.updatePage = this.db.prepare(
      'UPDATE pages SET mtime_ms = @mtimeMs, size = @size, bytes = @bytes, truncated = @truncated, title = @title, content = @content WHERE id = @id',
    );
    this.removePage = this.db.prepare('DELETE FROM pages WHERE id = ?');
    this.oldText = this.db.prepare('SELECT title, content FROM pages WHERE id = ?');
    this.indexText = this.db.prepare('INSERT INTO pages_fts (rowid, title, content) VALUES (?, ?, ?)');
    // An external-content table forgets a row by being told its old text.
    this.unindexText = this.db.prepare("INSERT INTO pages_fts (pages_fts, rowid, title, content) VALUES ('delete', ?, ?, ?)");
  }

  /** Bytes of page text in the index. */
  get totalBytes(): number {
    return this.bytes;
  }

  /** Whether a build ran to its end once (a restart then answers from the index at once). */
  get complete(): boolean {
    return (this.db.prepare("SELECT value FROM meta WHERE key = 'complete'").get() as { value: string } | undefined)?.value === '1';
  }

  markComplete(): void {
    this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('complete', '1')").run();
  }

  /** Writes and deletes pages in one transaction. */
  apply(writes: PageWrite[], deletes: string[]): void {
    if (writes.length === 0 && deletes.length === 0) return;
    this.db.transaction(() => {
      for (const path of deletes) {
        const old = this.pages.get(path);
        if (!old) continue;
        this.unindex(old.id);
        this.removePage.run(old.id);
        this.pages.delete(path);
        this.bytes -= old.bytes;
      }
      for (const page of writes) {
        const old = this.pages.get(page.path);
        const row = { ...page, truncated: page.truncated ? 1 : 0, id: old?.id ?? 0 };
        if (old) {
          this.unindex(old.id);
          this.updatePage.run(row);
        } else {
          row.id = Number(this.insertPage.run(row).lastInsertRowid);
        }
        this.indexText.run(row.id, page.title, page.content);
        this.bytes += page.bytes - (old?.bytes ?? 0);
        this.pages.set(page.path, { id: row.id, mtimeMs: page.mtimeMs, size: page.size, bytes: page.bytes, truncated: page.truncated });
      }
    })();
  }

  private unindex(id: number): void {
    const old = this.oldText.get(id) as { title: string; content: string } | undefined;
    if (old) this.unindexText.run(id, old.title, old.content);
  }

  /**
   * Merges the full-text index's segments a little (about `pages` leaf pages of work); returns
   * whether there was anything to merge. Called between batches after a build, so a query reads
   * few segments without one long merge holding the write lock.
   */
  merge(pages: number): boolean {
    const before = this.db.prepare('SELECT total_changes() AS n').get() as { n: number };
    this.db.prepare("INSERT INTO pages_fts (pages_fts, rank) VALUES ('merge', ?)").run(pages);
    const after = this.db.prepare('SELECT total_changes() AS n').get() as { n: number };
    return after.n - before.n > 1;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
