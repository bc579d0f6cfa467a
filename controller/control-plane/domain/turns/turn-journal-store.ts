/** What a journal belongs to: a background job's turn, a workflow task's attempts, a person's conversation. */
export type JournalKind = 'job' | 'task' | 'session';

/** A journal's summary, as listed. Times are epoch milliseconds. */
export interface JournalHeader {
  journalId: string;
  kind: JournalKind;
  agentId: string;
  /** A short label: the job's prompt, the task, the session's first message. */
  title: string;
  /** Entries appended so far: the next append starts at this sequence number. */
  entries: number;
  /** Turns that ended (a session has one per prompt). */
  turns: number;
  /** The status of the last turn that ended, or `running` while one is open. */
  lastStatus: string;
  createdAt: number;
  updatedAt: number;
}

/** One entry to append: its kind, small metadata, and the items it references (stored once each, by content). */
export interface NewJournalEntry {
  kind: string;
  /** Small metadata (ids, statuses, flags): kept inline with the entry. */
  data: Record<string, unknown>;
  /** The large parts (model output items, call outputs): stored by their hash, once across the store. */
  items: unknown[];
}

/** An entry as read back, its items resolved. */
export interface JournalEntry extends NewJournalEntry {
  seq: number;
  createdAt: number;
}

/** A journal and its entries in order. */
export interface StoredJournal {
  header: JournalHeader;
  entries: JournalEntry[];
}

/** What a journal costs in the store. */
export interface JournalSize {
  /** Bytes of the entries' own rows (metadata and item references). */
  entryBytes: number;
  /** Bytes of the distinct items the journal references. */
  itemBytes: number;
  /** Distinct items referenced. */
  items: number;
}

/**
 * The turn journals part of the control-plane store: append-only journals of what happened in a
 * turn (model responses, call intents, call results), so a turn whose runner died resumes on any
 * controller. Items are content-addressed (a hash of their JSON), so an output seen twice, or a
 * conversation's history, is stored once, and a journal grows with what happened, never with the
 * square of it.
 */
export interface TurnJournalStore {
  /**
   * Opens a journal, creating it empty when it does not exist, and returns it whole.
   *
   * @throws ControlPlaneError `permission_denied` when it exists for another agent or of another kind
   *   (a foreign id), naming both.
   */
  open(input: { journalId: string; kind: JournalKind; agentId: string; title: string; now: number }): Promise<StoredJournal>;
  /** The journal whole, or undefined when there is none. */
  get(journalId: string): Promise<StoredJournal | undefined>;
  /**
   * Appends `entries` at sequence `fromSeq` (the journal's `entries` as its writer last saw it), in
   * one transaction; `lastStatus`/`turnEnded` update the header when a turn ended.
   *
   * @throws ControlPlaneError `invalid_request` when the journal moved on (another runner appended
   *   since): the caller must stop, its turn is someone else's now. `not_found` when it does not exist.
   */
  append(input: { journalId: string; fromSeq: number; entries: NewJournalEntry[]; now: number; lastStatus?: string; turnEnded?: boolean }): Promise<void>;
  /** Journals newest first (by last change), of one kind and agent when given, at most `limit`. */
  list(input: { kind?: JournalKind; agentId?: string; limit: number }): Promise<JournalHeader[]>;
  /** What the journal takes in the store (the `journal` bench compares it with the sum of its items). */
  size(journalId: string): Promise<JournalSize>;
}
