// Apart from open-sqlite-store.ts on purpose: the part stores take this context and the opener imports
// the part stores, so naming it in the opener made a circle.
import type Database from 'better-sqlite3';

/** What the SQLite parts of the store share. */
export interface SqliteStoreContext {
  db: Database.Database;
  now: () => Date;
  newId: () => string;
}
