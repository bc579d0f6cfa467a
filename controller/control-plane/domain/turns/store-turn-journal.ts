import type { TurnJournal, TurnRecord } from '../../../loop/turn-journal.js';
import type { ResponseItem } from '../../../model/responses-model.js';
import { ControlPlaneError } from '../control-plane-error.js';
import type { JournalEntry, JournalKind, NewJournalEntry, TurnJournalStore } from './turn-journal-store.js';

/** The journal id of a background job's turn: the job's, so whichever controller claims the job again finds it. */
export const jobJournalId = (jobId: string): string => `job:${jobId}`;

/** The journal id of a person's conversation (`npm start -- --session NAME`). */
export const sessionJournalId = (name: string): string => `session:${name}`;

/** What a record keeps inline; its large parts go to `items`. */
function toEntry(record: TurnRecord): NewJournalEntry {
  switch (record.kind) {
    case 'input':
      return { kind: record.kind, data: {}, items: record.items };
    case 'model_response': {
      const { kind, output, ...data } = record;
      return { kind, data, items: output };
    }
    case 'call_result': {
      const { kind, output, details, ...data } = record;
      return { kind, data, items: details === undefined ? [output] : [output, { details }] };
    }
    default: {
      const { kind, ...data } = record;
      return { kind, data, items: [] };
    }
  }
}

/**
 * The record an entry holds.
 *
 * @throws ControlPlaneError `internal` for an entry of an unknown kind (a journal written by a newer
 *   controller, or damaged): resuming from it would guess.
 */
function toRecord(entry: JournalEntry, journalId: string): TurnRecord {
  const data = entry.data;
  switch (entry.kind) {
    case 'input':
      return { kind: 'input', items: entry.items as ResponseItem[] };
    case 'model_response':
      return { ...(data as object), kind: 'model_response', output: entry.items } as TurnRecord;
    case 'call_result': {
      const [output, extra] = entry.items as [ResponseItem, { details?: unknown } | undefined];
      return { ...(data as object), kind: 'call_result', output, ...(extra && 'details' in extra ? { details: extra.details } : {}) } as TurnRecord;
    }
    case 'call_intent':
    case 'turn_end':
      return { ...(data as object), kind: entry.kind } as TurnRecord;
    default:
      throw new ControlPlaneError('internal', `the journal ${journalId} has an entry of unknown kind "${entry.kind}" at ${entry.seq}: it was written by a newer controller or is damaged`);
  }
}

/** A journal open for appending, as the loop uses it. */
export interface StoreTurnJournal extends TurnJournal {
  readonly journalId: string;
}

/**
 * Opens (creating when absent) the journal `journalId` in the store and returns it as the loop's
 * `TurnJournal`: its records so far, and an `append` that writes each record in one transaction at
 * the next sequence number (so a second runner appending to it fails, and this one stops).
 *
 * @throws ControlPlaneError `permission_denied` for a journal of another agent or kind; `internal`
 *   for one that cannot be read back.
 */
export async function openStoreTurnJournal(
  store: TurnJournalStore,
  input: { journalId: string; kind: JournalKind; agentId: string; title: string; now?: () => number },
): Promise<StoreTurnJournal> {
  const now = input.now ?? Date.now;
  const opened = await store.open({ journalId: input.journalId, kind: input.kind, agentId: input.agentId, title: input.title, now: now() });
  const records = opened.entries.map((entry) => toRecord(entry, input.journalId));
  let seq = opened.header.entries;
  // Parallel calls settle together: appends go one after the other, each at the sequence the one
  // before it left (two at once would both claim the same number and the second would be refused).
  let tail: Promise<unknown> = Promise.resolve();
  const write = async (record: TurnRecord) => {
    const ended = record.kind === 'turn_end';
    await store.append({
      journalId: input.journalId,
      fromSeq: seq,
      entries: [toEntry(record)],
      now: now(),
      ...(ended ? { lastStatus: record.status, turnEnded: true } : record.kind === 'input' ? { lastStatus: 'running' } : {}),
    });
    seq++;
    records.push(record);
  };
  return {
    journalId: input.journalId,
    records,
    append(record) {
      const appended = tail.then(() => write(record));
      tail = appended.catch(() => {});
      return appended;
    },
  };
}
