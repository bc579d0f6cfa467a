import type { Selectable, Transaction } from 'kysely';
import { ControlPlaneError } from '../control-plane-error.js';
import type { ApprovalRecord, ApprovalStore } from './approval-store.js';
import type { PostgresStoreContext } from './store-context.js';
import type { ApprovalsTable, PostgresDatabase } from './store-schema.js';

const EXPIRED_REASON = 'nobody decided before it expired';

function toRecord(row: Selectable<ApprovalsTable>): ApprovalRecord {
  return {
    approvalId: row.approval_id,
    agentId: row.agent_id,
    turnId: row.turn_id,
    callId: row.call_id,
    toolName: row.tool_name,
    namespace: row.namespace,
    label: row.label,
    parametersJson: row.parameters_json,
    readOnly: row.read_only,
    destructive: row.destructive,
    status: row.status,
    reason: row.reason,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    ...(row.decided_at !== null ? { decidedAt: new Date(row.decided_at) } : {}),
  };
}

/**
 * The approvals part of the PostgreSQL store. Pending approvals past their time are expired by
 * whichever reader comes first, in the reader's transaction; a decision locks the row, so the first
 * of two controllers deciding together wins and the second is told it is no longer pending.
 */
export function createPostgresApprovalStore(context: PostgresStoreContext): ApprovalStore {
  const { db } = context;
  const nowMs = () => context.now().getTime();
  const expire = (trx: Transaction<PostgresDatabase>) =>
    trx
      .updateTable('approvals')
      .set((eb) => ({ status: 'expired', reason: EXPIRED_REASON, decided_at: eb.ref('expires_at') }))
      .where('status', '=', 'pending')
      .where('expires_at', '<=', nowMs())
      .execute();
  return {
    async create(approval) {
      const row = await db
        .insertInto('approvals')
        .values({
          approval_id: `appr-${context.newId()}`,
          agent_id: approval.agentId,
          turn_id: approval.turnId,
          call_id: approval.callId,
          tool_name: approval.toolName,
          namespace: approval.namespace,
          label: approval.label,
          parameters_json: approval.parametersJson,
          read_only: approval.readOnly,
          destructive: approval.destructive,
          status: 'pending',
          created_at: nowMs(),
          expires_at: approval.expiresAt.getTime(),
          decided_at: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toRecord(row);
    },
    get(approvalId) {
      return db.transaction().execute(async (trx) => {
        await expire(trx);
        const row = await trx.selectFrom('approvals').selectAll().where('approval_id', '=', approvalId).executeTakeFirst();
        return row ? toRecord(row) : undefined;
      });
    },
    list(filter) {
      return db.transaction().execute(async (trx) => {
        await expire(trx);
        let select = trx.selectFrom('approvals').selectAll();
        if (filter.agentId !== undefined) select = select.where('agent_id', '=', filter.agentId);
        if (filter.pendingOnly) select = select.where('status', '=', 'pending');
        return (await select.orderBy('seq', 'desc').limit(filter.limit ?? 100).execute()).map(toRecord);
      });
    },
    decide(approvalId, decision) {
      return db.transaction().execute(async (trx) => {
        await expire(trx);
        const row = await trx.selectFrom('approvals').selectAll().where('approval_id', '=', approvalId).forUpdate().executeTakeFirst();
        if (!row) throw new ControlPlaneError('not_found', `no approval ${approvalId}`);
        if (row.status !== 'pending') {
          throw new ControlPlaneError('invalid_request', `approval ${approvalId} is no longer pending: it is ${row.status}${row.reason ? ` (${row.reason})` : ''}`);
        }
        const updated = await trx
          .updateTable('approvals')
          .set({ status: decision.approved ? 'approved' : 'denied', reason: decision.reason ?? '', decided_at: nowMs() })
          .where('approval_id', '=', approvalId)
          .returningAll()
          .executeTakeFirstOrThrow();
        return toRecord(updated);
      });
    },
    async withdraw(approvalId, reason) {
      await db.updateTable('approvals').set({ status: 'expired', reason, decided_at: nowMs() }).where('approval_id', '=', approvalId).where('status', '=', 'pending').execute();
    },
  };
}
