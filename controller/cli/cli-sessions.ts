/**
 * npm start's conversations: `--session NAME` keeps the conversation in the control-plane store (the
 * turn journal `session:NAME`), so the next `--session NAME --prompt ...` continues it and a run cut
 * short (Ctrl-C, a crash) resumes; `--sessions` lists them. Flags are taken out of argv here, apart
 * from the other options.
 */
import { ToolRuntimeError } from '../../src/errors.js';
import type { ControlPlaneStore } from '../control-plane/domain/control-plane-store.js';
import { openStoreTurnJournal, sessionJournalId, type StoreTurnJournal } from '../control-plane/domain/turns/store-turn-journal.js';
import type { JournalHeader } from '../control-plane/domain/turns/turn-journal-store.js';
import { checkSessionName } from '../control-plane/domain/turns/session-name.js';
import type { TurnEvent } from '../loop/turn-events.js';
import { openTurnStart, type TurnRecord } from '../loop/turn-journal.js';

/** What the session flags ask for. */
export interface SessionFlags {
  /** `--session NAME`: the conversation to continue (created when new). */
  session?: string;
  /** `--sessions`: list the conversations and exit. */
  list: boolean;
  /** Whether `--prompt` was given (a session without one resumes its interrupted turn). */
  prompted: boolean;
}

/** The `--help` lines of the session flags. */
export const SESSION_USAGE = `  --session NAME          keep the conversation in the control-plane store under NAME: the next
                          run with --session NAME continues it (the model gets the whole history);
                          without --prompt, a run cut short (Ctrl-C, a crash) resumes where it stopped
  --sessions              list the stored conversations (name, turns, last status, first message)`;


/**
 * Takes `--session NAME` / `--session=NAME` and `--sessions` out of `argv`.
 *
 * @throws ToolRuntimeError `invalid_request` for a missing or malformed name, naming the rule.
 */
export function takeSessionFlags(argv: string[]): { argv: string[]; flags: SessionFlags } {
  const rest: string[] = [];
  const flags: SessionFlags = { list: false, prompted: false };
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index]!;
    if (arg === '--sessions') flags.list = true;
    else if (arg === '--session' || arg.startsWith('--session=')) {
      const name = arg.startsWith('--session=') ? arg.slice('--session='.length) : argv[++index];
      if (!name || name.startsWith('-')) throw new ToolRuntimeError('invalid_request', '--session needs a name, e.g. --session fix-tests');
      flags.session = checkSessionName(name, '--session');
    } else {
      if (arg === '--prompt' || arg.startsWith('--prompt=')) flags.prompted = true;
      rest.push(arg);
    }
  }
  if (flags.list && flags.session) throw new ToolRuntimeError('invalid_request', '--sessions lists the sessions: give it without --session');
  return { argv: rest, flags };
}

/** The `--sessions` listing: one line per session, newest first. */
export function formatSessions(headers: JournalHeader[]): string {
  if (headers.length === 0) return 'No sessions yet: start one with npm start -- --session NAME --prompt "..."\n';
  const rows = headers.map((header) => [
    header.journalId.slice('session:'.length),
    header.agentId,
    String(header.turns),
    header.lastStatus === 'running' ? 'interrupted (resume: --session NAME)' : header.lastStatus || 'new',
    new Date(header.updatedAt).toISOString().replace('T', ' ').slice(0, 19),
    header.title.replace(/\s+/g, ' ').slice(0, 60),
  ]);
  const all = [['SESSION', 'AGENT', 'TURNS', 'LAST', 'UPDATED (UTC)', 'FIRST MESSAGE'], ...rows];
  const widths = all[0]!.map((_, column) => Math.max(...all.map((row) => row[column]!.length)));
  return all.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ')).join('\n') + '\n';
}

/** A session's journal, and what this run does with it. */
export interface OpenedSession {
  journal: StoreTurnJournal;
  /** The session's last turn was cut short: this run resumes it first. */
  interrupted: boolean;
  /** Turns that ended so far. */
  turns: number;
}

/**
 * Opens the session `name` of `agentId` in the store.
 *
 * @throws ControlPlaneError `permission_denied` for a session of another agent (or an id that is
 *   not a session); `internal` for a journal that cannot be read back (damaged, or written by a newer
 *   controller); ToolRuntimeError `invalid_request` when there is nothing to do (no prompt and
 *   nothing to resume).
 */
export async function openSession(store: ControlPlaneStore, name: string, agentId: string, prompt: string, prompted: boolean): Promise<OpenedSession> {
  const journal = await openStoreTurnJournal(store.turns, { journalId: sessionJournalId(name), kind: 'session', agentId, title: prompt });
  const records: readonly TurnRecord[] = journal.records;
  const interrupted = openTurnStart(records) < records.length;
  const turns = records.filter((record) => record.kind === 'turn_end').length;
  if (!interrupted && !prompted && records.length > 0) {
    throw new ToolRuntimeError('invalid_request', `session "${name}" has nothing to resume (its ${turns} turn${turns === 1 ? '' : 's'} ended): continue it with --prompt "..."`);
  }
  return { journal, interrupted, turns };
}

/** One ended turn of a session, as the console's feed shows a turn. */
export interface SessionHistoryTurn {
  /** 1 for the first turn. */
  number: number;
  /** The turn's message, for the console's label. */
  prompt: string;
  events: TurnEvent[];
}

/**
 * A session's ended turns as the typed events a live turn emits (turn started, each model response,
 * each call's completion with its output, turn finished), so the console shows the session's history
 * beside the turn that runs now.
 */
export function sessionHistoryEvents(name: string, records: readonly TurnRecord[]): SessionHistoryTurn[] {
  const turns: SessionHistoryTurn[] = [];
  let events: TurnEvent[] = [];
  let prompt = '';
  let iteration = 0;
  for (const record of records) {
    if (record.kind === 'input') {
      const text = record.items.map((item) => (Array.isArray(item.content) ? (item.content as Array<{ text?: string }>).map((part) => part.text ?? '').join('') : '')).join('\n');
      prompt = text;
      iteration = 0;
      events = [{ type: 'turn-started', turnId: `session:${name}#${turns.length + 1}`, model: 'from the journal', tools: 0, deferredTools: 0 }];
    } else if (record.kind === 'model_response') {
      iteration++;
      const calls = record.output.filter((item) => item.type === 'function_call').length;
      events.push({ type: 'model-response', iteration, responseId: record.id, ...(record.usage ? { usage: record.usage } : {}), functionCalls: calls, outputItems: record.output.length });
    } else if (record.kind === 'call_result') {
      const output = typeof record.output.output === 'string' ? record.output.output : JSON.stringify(record.output.output);
      events.push({ type: 'activity-completed', callId: record.callId, name: record.name, label: record.label || record.name, durationMs: 0, ...(record.error ? { error: record.error } : {}), output: output.slice(0, 4_000) });
    } else if (record.kind === 'turn_end') {
      events.push({ type: 'turn-finished', status: record.status, finalText: record.finalText, modelCalls: record.modelCalls, ...(record.error ? { error: record.error } : {}) });
      turns.push({ number: turns.length + 1, prompt, events });
      events = [];
    }
  }
  return turns;
}
