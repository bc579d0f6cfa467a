import type { SidecarClient } from '../../../sidecar-client/create-sidecar-client.js';
import type { ToolTurn } from '../../../sidecar-client/sidecar-types.js';

/** An open task turn: the loop's view of it, and its end. */
export interface TaskTurnSession extends ToolTurn {
  /** Ends the turn; running calls finish or are cancelled within `timeoutMs`. */
  close(options?: { timeoutMs?: number }): Promise<void>;
  /** Cancels the turn's stream at once: the sidecar aborts its calls. */
  abort(): void;
}

/** What a task turn is opened with. */
export interface OpenTaskTurnInput {
  agentId: string;
  turnId: string;
  /** The persisted result schema, as JSON text (submit_result wraps it). */
  resultSchemaJson: string;
  signal: AbortSignal;
}

/**
 * Opens one isolated WORKFLOW_TASK turn.
 *
 * @throws ToolRuntimeError `sidecar_unavailable` or `aborted`, as SidecarClient.openTurn.
 */
export type OpenTaskTurn = (input: OpenTaskTurnInput) => Promise<TaskTurnSession>;

/** Task turns on sidecars: `clientFor(agentId)` picks the agent's sidecar (one for all by default). */
export function sidecarTaskTurns(clientFor: SidecarClient | ((agentId: string) => SidecarClient)): OpenTaskTurn {
  return (input) => {
    const client = typeof clientFor === 'function' ? clientFor(input.agentId) : clientFor;
    return client.openTurn(
      { agentId: input.agentId, turnId: input.turnId, kind: 'workflow_task', resultSchemaJson: input.resultSchemaJson },
      { signal: input.signal },
    );
  };
}
