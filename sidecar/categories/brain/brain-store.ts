import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { brainSchemaVersion } from './brain-protocol.js';

/**
 * The Brain database's layout, shared by the writer (the upkeep worker) and the reader (the main
 * thread). `pages` holds one row per indexed page, keyed by an integer id; `pages_fts` is an
 * external-content FTS5 table over `pages` joined by that rowid, kept in step by triggers, so a
 * delete or a lookup goes by key and the page text is stored once.
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
  CREATE TRIGGER IF NOT EXISTS pages_ai AFTER INSERT ON pages BEGIN
    INSERT INTO pages_fts (rowid, title, content) VALUES (new.id, new.title, new.content);
  END;
  CREATE TRIGGER IF NOT EXISTS pages_ad AFTER DELETE ON pages BEGIN
    INSERT INTO pages_fts (pages_fts, rowid, title, content) VALUES ('delete', old.id, old.title, old.content);
  END;
  CREATE TRIGGER IF NOT EXISTS pages_au AFTER UPDATE ON pages BEGIN
    INSERT INTO pages_fts (pages_fts, rowid, title, content) VALUES ('delete', old.id, old.title, old.content);
    INSERT INTO pages_fts (rowid, title, content) VALUES (new.id, new.title, new.content);
  END;
`;

/** What the store remembers of an indexed page, to tell a changed file from an unchanged one. */
export interface StoredPage {
  mtimeMs: number;
  size: number;
  /** Bytes of text indexed (at most the page cap). */
  bytes: number;
  truncated: boolean;
}

/** One page to write. */
export interface PageWrite extends StoredPage {
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
  private readonly upsert: Database.Statement;
  private readonly remove: Database.Statement;
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
    for (const row of this.db.prepare('SELECT path, mtime_ms, size, bytes, truncated FROM pages').iterate() as IterableIterator<{
      path: string;
      mtime_ms: number;
      size: number;
      bytes: number;
      truncated: number;
    }>) {
      this.pages.set(row.path, { mtimeMs: row.mtime_ms, size: row.size, bytes: row.bytes, truncated: row.truncated === 1 });
      this.bytes += row.bytes;
    }
    this.upsert = this.db.prepare(`
      INSERT INTO pages (path, mtime_ms, size, bytes, truncated, title, content) VALUES (@path, @mtimeMs, @size, @bytes, @truncated, @title, @content)
      ON CONFLICT (path) DO UPDATE SET mtime_ms = excluded.mtime_ms, size = excluded.size, bytes = excluded.bytes,
        truncated = excluded.truncated, title = excluded.title, content = excluded.content`);
    this.remove = this.db.prepare('DELETE FROM pages WHERE path = ?');
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
      for (const id of deletes) {
        const old = this.pages.get(id);
        if (!old) continue;
        this.remove.run(id);
        this.pages.delete(id);
        this.bytes -= old.bytes;
      }
      for (const page of writes) {
        this.upsert.run({ ...page, truncated: page.truncated ? 1 : 0 });
        this.bytes += page.bytes - (this.pages.get(page.path)?.bytes ?? 0);
        this.pages.set(page.path, { mtimeMs: page.mtimeMs, size: page.size, bytes: page.bytes, truncated: page.truncated });
      }
    })();
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
