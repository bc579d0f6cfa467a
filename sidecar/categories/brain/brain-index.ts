import { mkdirSync } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ToolRuntimeError } from '../../../src/index.js';
import { toFtsQuery } from './fts-query.js';

/** One recall hit. */
export interface BrainHit {
  /** The page's path relative to the Brain folder. */
  id: string;
  title: string;
  /** Matched words in [brackets], with context. */
  snippet: string;
  /** bm25 score (lower is better). */
  score: number;
}

/** One page, whole. */
export interface BrainPage {
  id: string;
  title: string;
  content: string;
}

export interface BrainIndexOptions {
  /** The folder of markdown pages (searched recursively). */
  brainDir: string;
  /** The SQLite database file; its folder is created. */
  databasePath: string;
  /** Skip the change scan when the last one is younger than this. Default 2,000 ms. */
  refreshIntervalMs?: number;
  /** Pages larger than this are indexed by their first bytes only. Default 1 MiB. */
  maxPageBytes?: number;
  /** At most this many pages are indexed. Default 20,000. */
  maxPages?: number;
  now?: () => number;
}

const titleOf = (id: string, content: string) =>
  /^title:\s*(.+)$/m.exec(content.startsWith('---') ? content.slice(0, content.indexOf('\n---', 3) + 1) : '')?.[1]?.trim() ||
  /^#\s+(.+)$/m.exec(content)?.[1]?.trim() ||
  path.basename(id, path.extname(id));

/**
 * The Brain's full-text index: markdown pages under `brainDir`, in SQLite FTS5 (better-sqlite3),
 * ranked by bm25 with snippets. Before a query it rescans the folder (mtime and size only, at most
 * once per `refreshIntervalMs`) and re-indexes pages that were added or changed and drops deleted
 * ones. Lives as long as the sidecar; `close()` closes the database.
 */
export class BrainIndex {
  private readonly db: Database.Database;
  private lastRefresh = Number.NEGATIVE_INFINITY;
  private refreshing: Promise<void> | undefined;

  constructor(private readonly options: BrainIndexOptions) {
    mkdirSync(path.dirname(options.databasePath), { recursive: true });
    this.db = new Database(options.databasePath);
    this.db.pragma('journal_mode = WAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS pages (id TEXT PRIMARY KEY, mtime_ms REAL NOT NULL, size INTEGER NOT NULL);
      CREATE VIRTUAL TABLE IF NOT EXISTS pages_fts USING fts5(id UNINDEXED, title, content, tokenize = 'porter unicode61');
    `);
  }

  /** Rescans the folder when the last scan is older than the interval; shares a scan in flight. */
  async refresh(signal: AbortSignal): Promise<void> {
    const now = (this.options.now ?? Date.now)();
    if (now - this.lastRefresh < (this.options.refreshIntervalMs ?? 2_000)) return this.refreshing;
    this.lastRefresh = now;
    this.refreshing = this.scan(signal).finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async scan(signal: AbortSignal): Promise<void> {
    const root = this.options.brainDir;
    const maxPages = this.options.maxPages ?? 20_000;
    const found = new Map<string, { mtimeMs: number; size: number }>();
    const folders = [''];
    while (folders.length > 0 && found.size < maxPages) {
      if (signal.aborted) throw new ToolRuntimeError('aborted', 'the Brain scan was aborted');
      const folder = folders.pop()!;
      const entries = await readdir(path.join(root, folder), { withFileTypes: true }).catch(() => []);
      for (const entry of entries) {
        if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
        const id = folder === '' ? entry.name : `${folder}/${entry.name}`;
        if (entry.isDirectory()) folders.push(id);
        else if (entry.isFile() && /\.(md|markdown)$/i.test(entry.name)) {
          const info = await stat(path.join(root, id)).catch(() => undefined);
          if (info) found.set(id, { mtimeMs: info.mtimeMs, size: info.size });
        }
      }
    }
    const known = new Map(
      (this.db.prepare('SELECT id, mtime_ms, size FROM pages').all() as Array<{ id: string; mtime_ms: number; size: number }>).map((row) => [row.id, row]),
    );
    const changed: Array<{ id: string; mtimeMs: number; size: number; content: string }> = [];
    for (const [id, info] of found) {
      const old = known.get(id);
      if (old && old.mtime_ms === info.mtimeMs && old.size === info.size) continue;
      const bytes = await readFile(path.join(root, id)).catch(() => undefined);
      if (bytes) changed.push({ id, ...info, content: bytes.subarray(0, this.options.maxPageBytes ?? 1024 * 1024).toString('utf8') });
    }
    const removed = [...known.keys()].filter((id) => !found.has(id));
    if (changed.length === 0 && removed.length === 0) return;
    const remove = this.db.prepare('DELETE FROM pages_fts WHERE id = ?');
    const removePage = this.db.prepare('DELETE FROM pages WHERE id = ?');
    const insert = this.db.prepare('INSERT INTO pages_fts (id, title, content) VALUES (?, ?, ?)');
    const upsert = this.db.prepare('INSERT OR REPLACE INTO pages (id, mtime_ms, size) VALUES (?, ?, ?)');
    this.db.transaction(() => {
      for (const id of removed) {
        remove.run(id);
        removePage.run(id);
      }
      for (const page of changed) {
        remove.run(page.id);
        insert.run(page.id, titleOf(page.id, page.content), page.content);
        upsert.run(page.id, page.mtimeMs, page.size);
      }
    })();
  }

  /** Ranks pages for free-text `query` (made safe for MATCH). Refreshes first. */
  async search(query: string, limit: number, signal: AbortSignal): Promise<BrainHit[]> {
    const match = toFtsQuery(query);
    await this.refresh(signal);
    const rows = this.db
      .prepare(
        `SELECT id, title, snippet(pages_fts, 2, '[', ']', '…', 24) AS snippet, bm25(pages_fts, 0.0, 5.0, 1.0) AS score
         FROM pages_fts WHERE pages_fts MATCH ? ORDER BY score LIMIT ?`,
      )
      .all(match, limit) as BrainHit[];
    return rows;
  }

  /** One page by id (its relative path). Refreshes first. @throws ToolRuntimeError `tool_failed` for an unknown id. */
  async getPage(id: string, signal: AbortSignal): Promise<BrainPage> {
    await this.refresh(signal);
    const row = this.db.prepare('SELECT id, title, content FROM pages_fts WHERE id = ?').get(id) as BrainPage | undefined;
    if (!row) throw new ToolRuntimeError('tool_failed', `no Brain page has the id ${JSON.stringify(id)}; ids are the paths recall returns`);
    return row;
  }

  close(): void {
    this.db.close();
  }
}
