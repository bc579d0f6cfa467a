import { errorMessage, type Logger } from '../../../../src/index.js';
import type { ApproveCallback } from '../../../sidecar-client/sidecar-types.js';
import type { ApprovalRecord, ApprovalStore } from './approval-store.js';

/** Options of `createStoredApprover`. */
export interface StoredApproverOptions {
  approvals: ApprovalStore;
  agentId: string;
  turnId: string;
  /** How long a stored approval waits for a person before it expires as denied. */
  expiresAfterMs: number;
  /** How often the store is read while waiting (default 250 ms). */
  pollMs?: number;
  now?: () => Date;
  logger?: Logger;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/**
 * The approver of turns the control plane runs unattended (background jobs, scheduled turns): each
 * request is stored as a pending approval that an operator decides through ControlPlaneService
 * (`npm run controller -- approvals approve|deny ID`), possibly from another process. The call
 * waits, reading the store every `pollMs`, until the decision, its expiry (denied, with the reason),
 * or its signal (the call ended: the approval is withdrawn). Never rejects: a store failure denies.
 */
export function createStoredApprover(options: StoredApproverOptions): ApproveCallback {
  const pollMs = options.pollMs ?? 250;
  const now = options.now ?? (() => new Date());
  return async (request, signal) => {
    const { approval } = request;
    let record: ApprovalRecord | undefined;
    try {
      record = await options.approvals.create({
        agentId: options.agentId,
        turnId: options.turnId,
        callId: request.callId,
        toolName: approval.toolName,
        namespace: approval.namespace ?? '',
        label: approval.label,
        parametersJson: typeof approval.parameters === 'string' ? approval.parameters : JSON.stringify(approval.parameters),
        readOnly: approval.readOnly,
        destructive: approval.destructive,
        expiresAt: new Date(now().getTime() + options.expiresAfterMs),
      });
      options.logger?.info('approval pending', { approvalId: record.approvalId, agentId: options.agentId, tool: approval.toolName, label: approval.label });
      while (record.status === 'pending' && !signal.aborted) {
        await sleep(pollMs, signal);
        if (signal.aborted) break;
        record = (await options.approvals.get(record.approvalId)) ?? record;
      }
      if (signal.aborted && record.status === 'pending') {
        await options.approvals.withdraw(record.approvalId, 'the call ended before anyone decided');
        return { approved: false, reason: 'the call ended before anyone decided' };
      }
      if (record.status === 'approved') return { approved: true, ...(record.reason ? { reason: record.reason } : {}) };
      const by = record.status === 'expired' ? `nobody decided within ${Math.round(options.expiresAfterMs / 1000)} s` : 'an operator denied it';
      return { approved: false, reason: record.reason ? `${by}: ${record.reason}` : by };
    } catch (error) {
      options.logger?.warn('approval failed', { error: errorMessage(error) });
      return { approved: false, reason: `the approval could not be stored or read: ${errorMessage(error)}` };
    }
  };
}
