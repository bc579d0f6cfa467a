/** Where a stored approval stands. `expired`: nobody decided in time, which counts as denied. */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired';

/** A call of a control-plane turn (a job, a scheduled turn) that waits for a person's decision. */
export interface ApprovalRecord {
  approvalId: string;
  agentId: string;
  turnId: string;
  callId: string;
  toolName: string;
  /** Empty when the tool has none. */
  namespace: string;
  label: string;
  parametersJson: string;
  readOnly: boolean;
  destructive: boolean;
  status: ApprovalStatus;
  /** The reason given with the decision (or why it expired). */
  reason: string;
  createdAt: Date;
  expiresAt: Date;
  decidedAt?: Date;
}

/** What a waiting call stores. */
export type NewApproval = Omit<ApprovalRecord, 'approvalId' | 'status' | 'reason' | 'createdAt' | 'decidedAt'>;

/**
 * The approval part of the control-plane store. A pending approval past its `expiresAt` is
 * expired (as denied) by whoever reads it first, so every reader sees the same state.
 */
export interface ApprovalStore {
  /** Stores a pending approval; resolves it with its new id. */
  create(approval: NewApproval): Promise<ApprovalRecord>;
  /** One approval (expired first when due); undefined when unknown. */
  get(approvalId: string): Promise<ApprovalRecord | undefined>;
  /** Approvals, newest first, of one agent or all; only pending ones with `pendingOnly`. */
  list(filter: { agentId?: string; pendingOnly?: boolean; limit?: number }): Promise<ApprovalRecord[]>;
  /**
   * Decides a pending approval. The first decision wins, in one transaction.
   *
   * @throws ControlPlaneError `not_found` for an unknown id; `invalid_request` when it was already
   *   decided or has expired (the message says which).
   */
  decide(approvalId: string, decision: { approved: boolean; reason?: string }): Promise<ApprovalRecord>;
  /**
   * Withdraws a pending approval whose call ended first (expired, with `reason`). Does nothing when
   * it was already decided.
   */
  withdraw(approvalId: string, reason: string): Promise<void>;
}
