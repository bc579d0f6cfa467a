import { randomUUID } from 'node:crypto';
import { errorMessage, silentLogger, type Logger } from '../../../../src/index.js';
import { runTurn, type RunTurnOptions } from '../../../loop/run-turn.js';
import { openTurnStart } from '../../../loop/turn-journal.js';
import type { ResponsesModel } from '../../../model/responses-model.js';
import type { SidecarClient } from '../../../sidecar-client/create-sidecar-client.js';
import type { ClientRequestHandler } from '../../../sidecar-client/sidecar-types.js';
import { ControlPlaneError } from '../../domain/control-plane-error.js';
import type { ControlPlaneStore } from '../../domain/control-plane-store.js';
import { openStoreTurnJournal, sessionJournalId } from '../../domain/turns/store-turn-journal.js';
import { answerControlRequest, type ControlHooks } from '../../grpc/answer-control-request.js';
import type { SessionTurnRunner } from '../../grpc/session-operations.js';

/** Session turns on the agents' sidecars, with a `close()` that stops them (they resume later). */
export interface SidecarSessionTurns extends SessionTurnRunner {
  close(): Promise<void>;
}

/**
 * Runs sessions' turns for ContinueSession: a text turn on the agent's sidecar, journaled in
 * `session:NAME`, so the conversation is the one `npm start -- --session NAME` continues. A turn cut
 * short is resumed before the next prompt runs. Calls that need approval are denied (nobody is at a
 * terminal); control requests are answered as the session's agent, without job tools. At `close()`
 * running turns are aborted: they have no end in the journal, so the next ContinueSession resumes them.
 */
export function sidecarSessionTurns(options: {
  clientFor: (agentId: string) => SidecarClient;
  model: ResponsesModel;
  store: ControlPlaneStore;
  hooks: () => ControlHooks;
  turnOptions?: Pick<RunTurnOptions, 'toolSearch' | 'flattenNamespaces' | 'maxModelCalls' | 'callDeadlineMs' | 'stopAt'>;
  logger?: Logger;
}): SidecarSessionTurns {
  const logger = options.logger ?? silentLogger;
  const running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  return {
    running: (name) => running.has(name),
    async start({ name, agentId, prompt }) {
      if (running.has(name)) throw new ControlPlaneError('invalid_request', `session "${name}" has a turn running on this controller: wait for it (ShowSession) before the next message`);
      const journal = await openStoreTurnJournal(options.store.turns, { journalId: sessionJournalId(name), kind: 'session', agentId, title: prompt });
      const interrupted = openTurnStart(journal.records) < journal.records.length;
      if (!interrupted && !prompt) throw new ControlPlaneError('invalid_request', `session "${name}" has nothing to resume: send a prompt`);
      const abort = new AbortController();
      const onClientRequest: ClientRequestHandler = async (event) => {
        if (event.kind !== 'control') return { kind: 'approval', approved: false, reason: 'session turns run for a client of the control plane: nobody can approve calls there' };
        return { kind: 'control', control: await answerControlRequest({ store: options.store, agentId, request: event.control, hooks: options.hooks() }) };
      };
      const done = (async () => {
        const turnId = `session:${name}.${randomUUID().slice(0, 8)}`;
        const turn = await options.clientFor(agentId).openTurn({ agentId, turnId, kind: 'text', canSpawnJobs: false, controlPlane: true, labels: { session: name } }, { signal: abort.signal, onClientRequest });
        try {
          const run = () => runTurn({ model: options.model, turn, prompt, signal: abort.signal, turnId, journal, ...options.turnOptions });
          const first = await run();
          if (interrupted && prompt && (first.status === 'completed' || first.status === 'terminated')) await run();
        } finally {
          if (abort.signal.aborted) turn.abort();
          else await turn.close({ timeoutMs: 5_000 });
        }
      })()
        .catch((error: unknown) => logger.error('a session turn failed', { session: name, error: errorMessage(error) }))
        .finally(() => running.delete(name));
      running.set(name, { abort, done });
      const header = (await options.store.turns.get(sessionJournalId(name)))!.header;
      return header;
    },
    async close() {
      for (const entry of running.values()) entry.abort.abort(new Error('the controller is shutting down'));
      await Promise.all([...running.values()].map((entry) => entry.done));
    },
  };
}
