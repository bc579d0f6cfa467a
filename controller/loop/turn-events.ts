import type { ModelUsage } from '../model/responses-model.js';

/** How a turn ended. */
export type TurnStatus =
  /** The model answered without calling a tool. */
  | 'completed'
  /** A tool result asked to end the turn. */
  | 'terminated'
  /** The model was called the maximum number of times and still asked for tools. */
  | 'max_model_calls'
  /** The turn's signal aborted it. */
  | 'aborted'
  /** The model provider failed (after its retries), or its response broke off or stalled. */
  | 'model_error'
  /** The model's final answer was cut off (e.g. `max_output_tokens`): `finalText` is the part that came. */
  | 'incomplete'
  /** The provider reported the response `failed` or `cancelled`; `error` says why. */
  | 'model_failed'
  /** The sidecar died or became unreachable. */
  | 'sidecar_unavailable'
  /** The turn's journal could not be written (the store is down, or another runner took the turn over). */
  | 'journal_failed';

/** The typed event stream of one turn (rendered as progress lines, or written as JSON lines). */
export type TurnEvent =
  | {
      type: 'turn-started';
      turnId: string;
      model: string;
      tools: number;
      deferredTools: number;
      /** Set when the turn resumes from its journal: what the journal already held. */
      resumed?: { modelCalls: number; callResults: number; rerun: number; interrupted: number };
    }
  | { type: 'model-request'; iteration: number; inputItems: number; tools: number }
  | {
      type: 'model-response';
      iteration: number;
      responseId: string;
      usage?: ModelUsage;
      functionCalls: number;
      outputItems: number;
      /** Set when the response did not complete: `incomplete`, `failed` or `cancelled`, with its reason. */
      status?: string;
      reason?: string;
    }
  | { type: 'activity-started'; callId: string; name: string; namespace?: string; label: string }
  | { type: 'presentation'; callId: string; kind: string; payload: unknown }
  | {
      type: 'activity-completed';
      callId: string;
      name: string;
      label: string;
      error?: { code: string; message: string };
      durationMs: number;
      /** What the sidecar repaired in the raw arguments before validating them. */
      repairs?: string[];
      /** The start of the result's text (at most 4,000 characters) as the model will see it. */
      output?: string;
    }
  | {
      /** The sidecar asks whether a validated call may run (the turn's approval policy). */
      type: 'approval-requested';
      callId: string;
      requestId: string;
      name: string;
      namespace?: string;
      label: string;
      parameters: unknown;
      readOnly: boolean;
      destructive: boolean;
    }
  | {
      type: 'approval-decided';
      callId: string;
      requestId: string;
      name: string;
      approved: boolean;
      reason?: string;
      /** `terminal`, `no-terminal`, `callback`, `control-plane`, or `call-ended` (withdrawn: the call ended first). */
      decidedBy: string;
    }
  | { type: 'turn-finished'; status: TurnStatus; finalText: string; modelCalls: number; error?: string };
