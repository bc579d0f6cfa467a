import { randomUUID } from 'node:crypto';
import type { Logger } from '../../../../src/index.js';
import { runTurn, type RunTurnOptions } from '../../../loop/run-turn.js';
import type { TurnEvent } from '../../../loop/turn-events.js';
import { recordApprovals } from '../../../approvals/terminal-approver.js';
import type { ApproveCallback } from '../../../sidecar-client/sidecar-types.js';
import type { ResponsesModel } from '../../../model/responses-model.js';
import type { SidecarClient } from '../../../sidecar-client/create-sidecar-client.js';
import type { ApprovalPolicyInput, ClientRequestHandler } from '../../../sidecar-client/sidecar-types.js';
import { createStoredApprover } from '../../domain/approvals/stored-approver.js';
import { jobJournalId, openStoreTurnJournal } from '../../domain/turns/store-turn-journal.js';
import { endedTurn } from '../../../loop/turn-journal.js';
import { answerControlRequest, type ControlHooks } from '../../grpc/answer-control-request.js';
import type { JobTurnOutcome, RunJobTurn } from '../../domain/jobs/job-runner.js';
import type { ControlPlaneStore } from '../../domain/control-plane-store.js';

/** Options of `sidecarJobTurns`. */
export interface SidecarJobTurnsOptions {
  clientFor: (agentId: string) => SidecarClient;
  /** The agent's own system prompt (the agents file's `instructions`), instead of the default one. */
  instructionsFor?: (agentId: string) => string | undefined;
  /** Each job turn's typed events (the web console records them). */
  onTurnEvent?: (turn: { turnId: string; agentId: string; kind: string; label: string }, event: TurnEvent) => void;
  model: ResponsesModel;
  store: ControlPlaneStore;
  /** The hooks control requests from the job's turn are answered with (read at each request). */
  hooks: () => ControlHooks;
  /** Calls that wait for an operator's decision, stored in `store.approvals`; none when absent. */
  approvals?: { policy: ApprovalPolicyInput; expiresAfterMs: number };
  turnOptions?: Pick<RunTurnOptions, 'toolSearch' | 'flattenNamespaces' | 'maxModelCalls' | 'callDeadlineMs' | 'idempotentTools' | 'stopAt'>;
  /** The longest a job's turn may run (default 30 minutes); then it is aborted and the job fails. */
  maxTurnMs?: number;
  logger?: Logger;
}

/** The default bound on one job turn. */
export const DEFAULT_MAX_JOB_TURN_MS = 30 * 60_000;

/**
 * Runs a background job (or a schedule's firing) as one text turn on the agent's sidecar: the turn
 * declares the control-plane capability and its control requests are answered as the job's agent
 * (never another), with `can_spawn_jobs` from the job (false for a job's own turn, so it gets no
 * job tools). With `approvals`, the calls its policy names wait for an operator's decision, stored as
 * pending approvals (expiring as denied). The signal, or `maxTurnMs`, aborts the model request and
 * every call in flight; a turn that does not complete is a failed job with the reason.
 *
 * The turn is journaled in `store.turns` under the job's id (`job:ID`): a job claimed again after its
 * controller died resumes its turn there (docs/reliability.md), and a job whose turn had ended before
 * its outcome was recorded gets that outcome without a model call.
 */
export function sidecarJobTurns(options: SidecarJobTurnsOptions): RunJobTurn {
  const maxTurnMs = options.maxTurnMs ?? DEFAULT_MAX_JOB_TURN_MS;
  return async (job, jobSignal) => {
    const deadline = AbortSignal.timeout(maxTurnMs);
    const signal = AbortSignal.any([jobSignal, deadline]);
    const turnId = `${job.jobId}#${job.attempts}.${randomUUID().slice(0, 8)}`;
    const journal = await openStoreTurnJournal(options.store.turns, { journalId: jobJournalId(job.jobId), kind: 'job', agentId: job.agentId, title: job.prompt.slice(0, 200) });
    const ended = endedTurn(journal.records);
    if (ended) return toJobOutcome(ended.status, ended.finalText, ended.error);
    // The console's view of this turn: its events, approvals asked and decided included.
    const onEvent = options.onTurnEvent ? (event: TurnEvent) => options.onTurnEvent?.({ turnId, agentId: job.agentId, kind: job.scheduleId ? 'schedule' : 'job', label: `${job.jobId}: ${job.prompt.slice(0, 100)}` }, event) : undefined;
    const recorded = (approve: ApproveCallback) => (onEvent ? recordApprovals(approve, onEvent, 'control-plane') : approve);
    const onClientRequest: ClientRequestHandler = async (event) => {
      if (event.kind !== 'control') {
        return { kind: 'approval', approved: false, reason: 'background turns run unattended: nobody can approve calls there' };
      }
      const control = await answerControlRequest({ store: options.store, agentId: job.agentId, request: event.control, hooks: options.hooks() });
      return { kind: 'control', control };
    };
    const turn = await options.clientFor(job.agentId).openTurn(
      {
        agentId: job.agentId,
        turnId,
        kind: 'text',
        canSpawnJobs: job.canSpawnJobs,
        controlPlane: true,
        labels: { job_id: job.jobId, ...(job.scheduleId ? { schedule_id: job.scheduleId } : {}) },
        ...(options.approvals ? { approvalPolicy: options.approvals.policy } : {}),
      },
      {
        signal,
        onClientRequest,
        ...(options.approvals
          ? {
              approve: recorded(createStoredApprover({
                approvals: options.store.approvals,
                agentId: job.agentId,
                turnId,
                expiresAfterMs: options.approvals.expiresAfterMs,
                ...(options.logger ? { logger: options.logger } : {}),
              })),
            }
          : {}),
      },
    );
    try {
      const instructions = options.instructionsFor?.(job.agentId);
      const outcome = await runTurn({ model: options.model, turn, prompt: job.prompt, signal, turnId, journal, ...options.turnOptions, ...(onEvent ? { onEvent } : {}), ...(instructions !== undefined ? { baseInstructions: instructions } : {}) });
      if (deadline.aborted && !jobSignal.aborted && outcome.status !== 'completed' && outcome.status !== 'terminated') {
        return { status: 'failed', finalText: outcome.finalText, error: `the job's turn ran past its ${maxTurnMs} ms bound and was aborted` };
      }
      return toJobOutcome(outcome.status, outcome.finalText, outcome.error);
    } finally {
      if (signal.aborted) turn.abort();
      else await turn.close({ timeoutMs: 5_000 });
    }
  };
}

/** A job's outcome from its turn's status. */
function toJobOutcome(status: string, finalText: string, error: string | undefined): JobTurnOutcome {
  if (status === 'completed' || status === 'terminated') return { status: 'succeeded', finalText, error: '' };
  return { status: 'failed', finalText, error: `turn ${status}: ${error ?? 'no reason given'}` };
}
