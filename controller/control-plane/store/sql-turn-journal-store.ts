import { createHash } from 'node:crypto';
import type { Selectable } from 'kysely';
import { ControlPlaneError } from '../domain/control-plane-error.js';
import type { JournalEntry, JournalHeader, NewJournalEntry, TurnJournalStore } from '../domain/turns/turn-journal-store.js';
import { changes, first, prepare, rows, type Script, type StoreContext } from './store-context.js';
import type { TurnJournalsTable } from './store-schema.js';

/** Items read per query when a journal is read back (a bound on the `IN` list). */
const ITEMS_PER_READ = 500;

function toHeader(row: Selectable<TurnJournalsTable>): JournalHeader {
  return {
    journalId: row.journal_id,
    kind: row.kind,
    agentId: row.agent_id,
    title: row.title,
    // BIGINT columns come back as numbers or strings depending on the driver.
    entries: Number(row.entries),
    turns: Number(row.turns),
    lastStatus: row.last_status,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** An item's key: the SHA-256 of its JSON, base64url (43 characters). */
function hashOf(body: string): string {
  return createHash('sha256').update(body).digest('base64url');
}

/**
 * The turn journals part of the store, on either database. An append is one transaction: it moves
 * the header's `entries` from `fromSeq` on (so a second writer of the same journal, a runner that
 * lost its claim, fails instead of interleaving), inserts each item that is not stored yet and the
 * entries. The hot statements are prepared once (`prepare`, saving the build and compile of each
 * query): journaling costs about 0.25 ms per model or tool call on SQLite against the same turn
 * unjournaled (row `SQLite: journaling cost per model or tool call` of `npm run bench -- journal`).
 */
export function createSqlTurnJournalStore(context: StoreContext): TurnJournalStore {
  const { db } = context;
  const advance = prepare((p: { journalId: string; fromSeq: number; count: number; now: number }) =>
    db
      .updateTable('turn_journals')
      .set((eb) => ({ entries: eb('entries', '+', p.count), updated_at: p.now }))
      .where('journal_id', '=', p.journalId)
      .where('entries', '=', p.fromSeq),
  );
  const insertItem = prepare((p: { hash: string; body: string; bytes: number }) =>
    db.insertInto('turn_items').values({ hash: p.hash, body: p.body, bytes: p.bytes }).onConflict((conflict) => conflict.column('hash').doNothing()),
  );
  const insertEntry = prepare((p: { journalId: string; seq: number; kind: string; data: string; items: string; now: number }) =>
    db.insertInto('turn_journal_entries').values({ journal_id: p.journalId, seq: p.seq, kind: p.kind, data_json: p.data, items_json: p.items, created_at: p.now }),
  );
  const header = (journalId: string) => first(db.selectFrom('turn_journals').selectAll().where('journal_id', '=', journalId));

  function* readWhole(journalId: string): Script<{ header: JournalHeader; entries: JournalEntry[] } | undefined> {
    const row = yield* header(journalId);
    if (!row) return undefined;
    const entryRows = yield* rows(db.selectFrom('turn_journal_entries').selectAll().where('journal_id', '=', journalId).orderBy('seq'));
    const hashes = new Set<string>();
    const refs = entryRows.map((entry) => JSON.parse(entry.items_json) as string[]);
    for (const list of refs) for (const hash of list) hashes.add(hash);
    const bodies = new Map<string, unknown>();
    const all = [...hashes];
    for (let start = 0; start < all.length; start += ITEMS_PER_READ) {
      const found = yield* rows(db.selectFrom('turn_items').select(['hash', 'body']).where('hash', 'in', all.slice(start, start + ITEMS_PER_READ)));
      for (const item of found) bodies.set(item.hash, JSON.parse(item.body));
    }
    const entries = entryRows.map((entry, index): JournalEntry => ({
      seq: Number(entry.seq),
      kind: entry.kind,
      data: JSON.parse(entry.data_json) as Record<string, unknown>,
      items: (refs[index] ?? []).map((hash) => {
        if (!bodies.has(hash)) throw new ControlPlaneError('internal', `the journal ${journalId} references item ${hash}, which the store does not hold: the journal is corrupted`);
        return bodies.get(hash);
      }),
      createdAt: Number(entry.created_at),
    }));
    return { header: toHeader(row), entries };
  }

  return {
    open(input) {
      return context.transaction(function* () {
        const existing = yield* header(input.journalId);
        if (existing && (existing.agent_id !== input.agentId || existing.kind !== input.kind)) {
          throw new ControlPlaneError(
            'permission_denied',
            `the journal "${input.journalId}" is a ${existing.kind} of agent "${existing.agent_id}", not a ${input.kind} of agent "${input.agentId}": use another name`,
          );
        }
        if (!existing) {
          yield* changes(
            db.insertInto('turn_journals').values({
              journal_id: input.journalId,
              kind: input.kind,
              agent_id: input.agentId,
              title: input.title.slice(0, 200),
              entries: 0,
              turns: 0,
              last_status: '',
              created_at: input.now,
              updated_at: input.now,
            }),
          );
        }
        return (yield* readWhole(input.journalId))!;
      });
    },
    get(journalId) {
      return context.read(() => readWhole(journalId));
    },
    append(input) {
      // Serialised outside the transaction: hashing a large output must not hold the write lock.
      const prepared = input.entries.map((entry: NewJournalEntry) => {
        const items = entry.items.map((item) => {
          const body = JSON.stringify(item) ?? 'null';
          return { hash: hashOf(body), body, bytes: Buffer.byteLength(body) };
        });
        return { kind: entry.kind, data: JSON.stringify(entry.data), items, refs: JSON.stringify(items.map((item) => item.hash)) };
      });
      return context.transaction(function* () {
        const moved = yield* changes(advance({ journalId: input.journalId, fromSeq: input.fromSeq, count: prepared.length, now: input.now }));
        if (moved === 0) {
          const row = yield* header(input.journalId);
          if (!row) throw new ControlPlaneError('not_found', `no journal "${input.journalId}"`);
          throw new ControlPlaneError(
            'invalid_request',
            `the journal "${input.journalId}" has ${Number(row.entries)} entries, not ${input.fromSeq}: another runner appended to it, so this turn is no longer this runner's`,
          );
        }
        let seq = input.fromSeq;
        for (const entry of prepared) {
          for (const item of entry.items) yield* changes(insertItem(item));
          yield* changes(insertEntry({ journalId: input.journalId, seq: seq++, kind: entry.kind, data: entry.data, items: entry.refs, now: input.now }));
        }
        if (input.lastStatus !== undefined || input.turnEnded) {
          yield* changes(
            db
              .updateTable('turn_journals')
              .set((eb) => ({
                ...(input.lastStatus !== undefined ? { last_status: input.lastStatus } : {}),
                ...(input.turnEnded ? { turns: eb('turns', '+', 1) } : {}),
              }))
              .where('journal_id', '=', input.journalId),
          );
        }
      });
    },
    list(input) {
      return context.read(function* () {
        let query = db.selectFrom('turn_journals').selectAll();
        if (input.kind) query = query.where('kind', '=', input.kind);
        if (input.agentId) query = query.where('agent_id', '=', input.agentId);
        const found = yield* rows(query.orderBy('updated_at', 'desc').orderBy('journal_id').limit(Math.max(1, Math.min(input.limit, 1_000))));
        return found.map(toHeader);
      });
    },
    size(journalId) {
      return context.read(function* () {
        const entryRows = yield* rows(db.selectFrom('turn_journal_entries').select(['data_json', 'items_json', 'kind']).where('journal_id', '=', journalId));
        const hashes = new Set<string>();
        let entryBytes = 0;
        for (const entry of entryRows) {
          entryBytes += Buffer.byteLength(entry.data_json) + Buffer.byteLength(entry.items_json) + Buffer.byteLength(entry.kind) + 16;
          for (const hash of JSON.parse(entry.items_json) as string[]) hashes.add(hash);
        }
        let itemBytes = 0;
        const all = [...hashes];
        for (let start = 0; start < all.length; start += ITEMS_PER_READ) {
          const found = yield* rows(db.selectFrom('turn_items').select(['bytes']).where('hash', 'in', all.slice(start, start + ITEMS_PER_READ)));
          for (const item of found) itemBytes += Number(item.bytes);
        }
        return { entryBytes, itemBytes, items: hashes.size };
      });
    },
  };
}
