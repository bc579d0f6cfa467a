import { ToolRuntimeError } from '../../src/index.js';
import type { ApprovalDecision, ApprovalRequestEvent, ApproveCallback } from '../sidecar-client/sidecar-types.js';

/** A call of a turn in this process that waits for a decision from the console. */
export interface PendingConsoleApproval {
  approvalId: string;
  agentId: string;
  turnId: string;
  callId: string;
  toolName: string;
  namespace: string;
  label: string;
  parametersJson: string;
  readOnly: boolean;
  destructive: boolean;
  createdAt: string;
}

interface Waiting {
  approval: PendingConsoleApproval;
  resolve: (decision: ApprovalDecision) => void;
}

/**
 * The approvals of turns run in this process (`npm start -- --console`): each request waits in
 * memory until the page approves or denies it. The call's signal ending the wait (the call was
 * cancelled or its deadline passed) withdraws it as denied. `onChange` runs when the pending set
 * changes (the console tells its pages).
 */
export class ConsoleApprovals {
  readonly #waiting = new Map<string, Waiting>();
  readonly #onChange: () => void;

  constructor(options: { onChange?: () => void } = {}) {
    this.#onChange = options.onChange ?? (() => {});
  }

  /** The approver of one turn's calls. */
  approverFor(meta: { agentId: string; turnId: string }): ApproveCallback {
    return (request: ApprovalRequestEvent, signal: AbortSignal) =>
      new Promise<ApprovalDecision>((resolve) => {
        const { approval } = request;
        const approvalId = `${meta.turnId}:${request.requestId}`;
        const done = (decision: ApprovalDecision) => {
          signal.removeEventListener('abort', onAbort);
          if (this.#waiting.delete(approvalId)) this.#onChange();
          resolve(decision);
        };
        const onAbort = () => done({ approved: false, reason: 'the call ended before anyone decided' });
        if (signal.aborted) return onAbort();
        this.#waiting.set(approvalId, {
          resolve: done,
          approval: {
            approvalId,
            agentId: meta.agentId,
            turnId: meta.turnId,
            callId: request.callId,
            toolName: approval.toolName,
            namespace: approval.namespace ?? '',
            label: approval.label,
            parametersJson: typeof approval.parameters === 'string' ? approval.parameters : JSON.stringify(approval.parameters),
            readOnly: approval.readOnly,
            destructive: approval.destructive,
            createdAt: new Date().toISOString(),
          },
        });
        signal.addEventListener('abort', onAbort, { once: true });
        this.#onChange();
      });
  }

  /** The calls waiting now, oldest first. */
  pending(): PendingConsoleApproval[] {
    return [...this.#waiting.values()].map((entry) => entry.approval);
  }

  /** Whether `approvalId` is one of this process's waiting calls. */
  has(approvalId: string): boolean {
    return this.#waiting.has(approvalId);
  }

  /**
   * Decides a waiting call.
   *
   * @throws ToolRuntimeError `invalid_request` when no call waits under `approvalId` (decided already, or
   *   its call ended).
   */
  decide(approvalId: string, decision: { approved: boolean; reason?: string }): PendingConsoleApproval {
    const entry = this.#waiting.get(approvalId);
    if (!entry) throw new ToolRuntimeError('invalid_request', `no call waits for approval "${approvalId}" (decided already, or its call ended)`);
    entry.resolve({ approved: decision.approved, ...(decision.reason ? { reason: decision.reason } : {}) });
    return entry.approval;
  }

  /** Denies every waiting call (the console is closing). */
  close(): void {
    for (const entry of [...this.#waiting.values()]) entry.resolve({ approved: false, reason: 'the console closed before anyone decided' });
  }
}
