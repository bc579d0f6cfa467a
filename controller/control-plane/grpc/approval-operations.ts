import { ControlPlaneError } from '../domain/control-plane-error.js';
import type { ApprovalOperations } from './control-plane-server.js';
import type { ApprovalStore } from '../domain/approvals/approval-store.js';
import { toProtoApproval } from './to-proto-approval.js';

/**
 * ControlPlaneService's ListApprovals and DecideApproval over the store. An empty `agent_id` lists
 * every agent's approvals.
 *
 * @throws ControlPlaneError `invalid_request` without an approval id, or when it was already
 *   decided or has expired; `not_found` for an unknown id (the server maps them to statuses).
 */
export function createApprovalOperations(approvals: ApprovalStore): ApprovalOperations {
  return {
    async list(request) {
      const records = await approvals.list({ ...(request.agentId ? { agentId: request.agentId } : {}), pendingOnly: request.pendingOnly });
      return { approvals: records.map(toProtoApproval) };
    },
    async decide(request) {
      if (!request.approvalId) throw new ControlPlaneError('invalid_request', 'approval_id is required');
      const record = await approvals.decide(request.approvalId, { approved: request.approved, reason: request.reason });
      return { approval: toProtoApproval(record) };
    },
  };
}
