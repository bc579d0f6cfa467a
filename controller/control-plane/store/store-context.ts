// Apart from open-postgres-store.ts on purpose: the part stores take this context and the opener imports
// the part stores, so naming it in the opener made a circle.
import type { Kysely } from 'kysely';
import type { PostgresDatabase } from './store-schema.js';

/** What the PostgreSQL parts of the store share. */
export interface PostgresStoreContext {
  db: Kysely<PostgresDatabase>;
  now: () => Date;
  newId: () => string;
}
