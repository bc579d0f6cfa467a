import type { ControlPlaneStore } from '../control-plane-store.js';
import type { TaskClaim } from '../workflows/workflow-store.js';
import { openStoreTurnJournal, type StoreTurnJournal } from './store-turn-journal.js';

/**
 * Opens the journal of a claimed task attempt. An attempt claimed again because its runner was
 * gone (the one before it logged `interrupted`) continues the journal of the attempt it replaces,
 * so a chain of interrupted attempts is one turn resumed; an attempt after a failed one starts a
 * journal of its own (a retry is a fresh turn, as the workflow contract says). The id names the
 * chain's first attempt: `task:RUN:TASK:N`. A first attempt reads nothing but its journal.
 *
 * @throws as TurnJournalStore.open, and the store's errors reading the attempt log.
 */
export async function openTaskJournal(store: ControlPlaneStore, claim: TaskClaim, agentId: string): Promise<StoreTurnJournal> {
  let first = claim.attempt;
  if (claim.attempt > 1) {
    const attempts = (await store.workflows.listAttempts(claim.runId)).filter((attempt) => attempt.taskId === claim.taskId);
    const outcome = (number: number) => attempts.find((attempt) => attempt.attempt === number)?.outcome;
    while (first > 1 && outcome(first - 1) === 'interrupted') first--;
  }
  return openStoreTurnJournal(store.turns, {
    journalId: `task:${claim.runId}:${claim.taskId}:${first}`,
    kind: 'task',
    agentId,
    title: `${claim.runId} · ${claim.taskId}`,
  });
}
