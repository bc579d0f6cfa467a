// A stored approval as ControlPlaneService's Approval message: the proto side of the approvals,
// apart from the stored approver (domain/) so that the domain names no generated type.
import { ApprovalState, type Approval } from '../../../src/gen/toolruntime/v1/control_plane.js';
import type { ApprovalRecord, ApprovalStatus } from '../domain/approvals/approval-store.js';

const states: Record<ApprovalStatus, ApprovalState> = {
  pending: ApprovalState.APPROVAL_STATE_PENDING,
  approved: ApprovalState.APPROVAL_STATE_APPROVED,
  denied: ApprovalState.APPROVAL_STATE_DENIED,
  expired: ApprovalState.APPROVAL_STATE_EXPIRED,
};

/** A stored approval as the proto's Approval. */
export function toProtoApproval(record: ApprovalRecord): Approval {
  return {
    approvalId: record.approvalId,
    agentId: record.agentId,
    turnId: record.turnId,
    callId: record.callId,
    toolName: record.toolName,
    namespace: record.namespace,
    label: record.label,
    parametersJson: record.parametersJson,
    readOnly: record.readOnly,
    destructive: record.destructive,
    state: states[record.status],
    reason: record.reason,
    createdAt: record.createdAt.toISOString(),
    expiresAt: record.expiresAt.toISOString(),
    decidedAt: record.decidedAt?.toISOString() ?? '',
  };
}
