import type {
  ContinueSessionRequest,
  ContinueSessionResponse,
  ListSessionsRequest,
  ListSessionsResponse,
  Session,
  ShowSessionRequest,
  ShowSessionResponse,
} from '../../../src/gen/toolruntime/v1/control_plane.js';
import { ControlPlaneError } from '../domain/control-plane-error.js';
import { checkSessionName } from '../domain/turns/session-name.js';
import { sessionJournalId } from '../domain/turns/store-turn-journal.js';
import type { JournalHeader, TurnJournalStore } from '../domain/turns/turn-journal-store.js';

/** Sessions through ControlPlaneService (ListSessions, ShowSession, ContinueSession). */
export interface SessionOperations {
  list(request: ListSessionsRequest): Promise<ListSessionsResponse>;
  show(request: ShowSessionRequest): Promise<ShowSessionResponse>;
  continue(request: ContinueSessionRequest): Promise<ContinueSessionResponse>;
}

/** What runs a session's turns on this controller (serve's session turns). */
export interface SessionTurnRunner {
  /** Whether a turn of the session runs in this process now. */
  running(name: string): boolean;
  /**
   * Starts the session's next turn (resuming one cut short first), in the background; resolves once
   * it started, with the session's header.
   *
   * @throws ControlPlaneError as `openStoreTurnJournal`, and `invalid_request` when a turn of it runs
   *   here already or there is nothing to resume.
   */
  start(input: { name: string; agentId: string; prompt: string }): Promise<JournalHeader>;
}

const toSession = (header: JournalHeader, running: boolean): Session => ({
  name: header.journalId.slice('session:'.length),
  agentId: header.agentId,
  title: header.title,
  turns: header.turns,
  lastStatus: header.lastStatus,
  createdAt: new Date(header.createdAt).toISOString(),
  updatedAt: new Date(header.updatedAt).toISOString(),
  interrupted: header.lastStatus === 'running' && !running,
  running,
});

/**
 * The session RPCs over the store's journals and this controller's runner.
 *
 * @throws ControlPlaneError `invalid_request` for a malformed name or an agent this controller does
 *   not run; `not_found` for an unknown session; the runner's refusals.
 */
export function createSessionOperations(options: { turns: TurnJournalStore; agentIds: readonly string[]; runner: SessionTurnRunner }): SessionOperations {
  const { turns, runner } = options;
  return {
    async list(request) {
      const headers = await turns.list({ kind: 'session', ...(request.agentId ? { agentId: request.agentId } : {}), limit: request.limit || 50 });
      return { sessions: headers.map((header) => toSession(header, runner.running(header.journalId.slice('session:'.length)))) };
    },
    async show(request) {
      const name = checkSessionName(request.name);
      const journal = await turns.get(sessionJournalId(name));
      if (!journal || journal.header.kind !== 'session') throw new ControlPlaneError('not_found', `no session "${name}"`);
      return {
        session: toSession(journal.header, runner.running(name)),
        entries: journal.entries.map((entry) => ({
          seq: entry.seq,
          kind: entry.kind,
          dataJson: JSON.stringify(entry.data),
          itemsJson: JSON.stringify(entry.items),
          createdAt: new Date(entry.createdAt).toISOString(),
        })),
      };
    },
    async continue(request) {
      const name = checkSessionName(request.name);
      if (!options.agentIds.includes(request.agentId)) {
        throw new ControlPlaneError('invalid_request', `agent "${request.agentId}" is not in this controller's agents file (${options.agentIds.join(', ')}): its session would never run`);
      }
      const header = await runner.start({ name, agentId: request.agentId, prompt: request.prompt });
      return { session: toSession(header, true) };
    },
  };
}
