import type { Logger } from '../../../src/index.js';
import type { ControlPlaneStore } from '../domain/control-plane-store.js';
import { isPostgresUrl, openPostgresStore } from './postgres/open-postgres-store.js';
import { openSqliteStore } from './sqlite/open-sqlite-store.js';

/** Options of `openControlPlaneStore`. */
export interface OpenControlPlaneStoreOptions {
  /**
   * `postgres://...` for a PostgreSQL database shared by several controllers; absent or empty for
   * the embedded SQLite file in `dataDir`.
   */
  database?: string;
  /** The SQLite store's folder (ignored with a PostgreSQL `database`). */
  dataDir: string;
  /** How long a claim lasts unrenewed when its runner names no lease, before another controller may take the work over (default 900 s). */
  claimExpirySeconds?: number;
  now?: () => Date;
  newId?: () => string;
  /** PostgreSQL only: where connection errors and a lost or regained database are logged. */
  logger?: Logger;
}

/**
 * Opens the control-plane store the options name: PostgreSQL when `database` is a `postgres://` or
 * `postgresql://` URL, else the embedded SQLite store in `dataDir`. Callers get the same
 * `ControlPlaneStore` either way.
 *
 * @throws ControlPlaneError `unavailable` when the store cannot be opened or migrated; `invalid_request`
 *   when `database` is set but is not a PostgreSQL URL.
 */
export async function openControlPlaneStore(options: OpenControlPlaneStoreOptions): Promise<ControlPlaneStore> {
  const extra = { ...(options.now ? { now: options.now } : {}), ...(options.newId ? { newId: options.newId } : {}) };
  if (options.database) {
    return openPostgresStore({ url: options.database, ...extra, ...(options.logger ? { logger: options.logger } : {}), ...(options.claimExpirySeconds ? { claimExpirySeconds: options.claimExpirySeconds } : {}) });
  }
  return openSqliteStore({ dataDir: options.dataDir, ...extra, ...(options.claimExpirySeconds ? { claimExpirySeconds: options.claimExpirySeconds } : {}) });
}

// Re-exported for the callers that open the store too; light callers import database-option.ts.
export { resolveDatabaseOption } from './database-option.js';
