import type { Database } from 'better-sqlite3';
import { ControlPlaneError } from '../../domain/control-plane-error.js';
import type { ApprovalRecord, ApprovalStatus, ApprovalStore, NewApproval } from '../approval-store.js';

/** The approvals table, one entry of the store's ordered migration list (migrations.ts gives it its version). Times are epoch ms. */
export const approvalMigration: { name: string; sql: string } = {
  name: 'approvals',
  sql: `
      CREATE TABLE approvals (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        approval_id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        namespace TEXT NOT NULL,
        label TEXT NOT NULL,
        parameters_json TEXT NOT NULL,
        read_only INTEGER NOT NULL,
        destructive INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
        reason TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        decided_at INTEGER
      );
      CREATE INDEX approvals_by_agent ON approvals (agent_id, seq);
      CREATE INDEX approvals_pending ON approvals (status, expires_at);
    `,
};

interface ApprovalRow {
  approval_id: string;
  agent_id: string;
  turn_id: string;
  call_id: string;
  tool_name: string;
  namespace: string;
  label: string;
  parameters_json: string;
  read_only: number;
  destructive: number;
  status: ApprovalStatus;
  reason: string;
  created_at: number;
  expires_at: number;
  decided_at: number | null;
}

function toRecord(row: ApprovalRow): ApprovalRecord {
  return {
    approvalId: row.approval_id,
    agentId: row.agent_id,
    turnId: row.turn_id,
    callId: row.call_id,
    toolName: row.tool_name,
    namespace: row.namespace,
    label: row.label,
    parametersJson: row.parameters_json,
    readOnly: row.read_only === 1,
    destructive: row.destructive === 1,
    status: row.status,
    reason: row.reason,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    ...(row.decided_at !== null ? { decidedAt: new Date(row.decided_at) } : {}),
  };
}

const EXPIRED_REASON = 'nobody decided before it expired';

/** The approvals part of the SQLite store, over an open database that has the approvals table. */
export function createSqliteApprovalStore(options: { db: Database; now: () => Date; newId: () => string }): ApprovalStore {
  const { db } = options;
  const selectOne = db.prepare('SELECT * FROM approvals WHERE approval_id = ?');
  const expireDue = db.prepare(
    "UPDATE approvals SET status = 'expired', reason = ?, decided_at = expires_at WHERE status = 'pending' AND expires_at <= ?",
  );
  const insert = db.prepare(
    `INSERT INTO approvals (approval_id, agent_id, turn_id, call_id, tool_name, namespace, label, parameters_json, read_only, destructive, status, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
  );
  const update = db.prepare("UPDATE approvals SET status = ?, reason = ?, decided_at = ? WHERE approval_id = ? AND status = 'pending'");
  const expire = () => expireDue.run(EXPIRED_REASON, options.now().getTime());

  const decide = db.transaction((approvalId: string, approved: boolean, reason: string) => {
    expire();
    const row = selectOne.get(approvalId) as ApprovalRow | undefined;
    if (!row) throw new ControlPlaneError('not_found', `no approval ${approvalId}`);
    if (row.status !== 'pending') {
      throw new ControlPlaneError('invalid_request', `approval ${approvalId} is no longer pending: it is ${row.status}${row.reason ? ` (${row.reason})` : ''}`);
    }
    update.run(approved ? 'approved' : 'denied', reason, options.now().getTime(), approvalId);
    return toRecord(selectOne.get(approvalId) as ApprovalRow);
  });
  const read = db.transaction((approvalId: string) => {
    expire();
    const row = selectOne.get(approvalId) as ApprovalRow | undefined;
    return row ? toRecord(row) : undefined;
  });
  const list = db.transaction((agentId: string | undefined, pendingOnly: boolean, limit: number) => {
    expire();
    const where = [agentId !== undefined ? 'agent_id = @agentId' : '', pendingOnly ? "status = 'pending'" : ''].filter(Boolean);
    const rows = db
      .prepare(`SELECT * FROM approvals ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT @limit`)
      .all({ ...(agentId !== undefined ? { agentId } : {}), limit }) as ApprovalRow[];
    return rows.map(toRecord);
  });

  return {
    async create(approval: NewApproval) {
      const approvalId = `appr-${options.newId()}`;
      insert.run(
        approvalId,
        approval.agentId,
        approval.turnId,
        approval.callId,
        approval.toolName,
        approval.namespace,
        approval.label,
        approval.parametersJson,
        approval.readOnly ? 1 : 0,
        approval.destructive ? 1 : 0,
        options.now().getTime(),
        approval.expiresAt.getTime(),
      );
      return toRecord(selectOne.get(approvalId) as ApprovalRow);
    },
    async get(approvalId) {
      return read.immediate(approvalId);
    },
    async list(filter) {
      return list.immediate(filter.agentId, filter.pendingOnly === true, filter.limit ?? 100);
    },
    async decide(approvalId, decision) {
      return decide.immediate(approvalId, decision.approved, decision.reason ?? '');
    },
    async withdraw(approvalId, reason) {
      db.transaction(() => update.run('expired', reason, options.now().getTime(), approvalId)).immediate();
    },
  };
}
