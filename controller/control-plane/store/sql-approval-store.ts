import type { Selectable } from 'kysely';
import { ControlPlaneError } from '../domain/control-plane-error.js';
import type { ApprovalRecord, ApprovalStore } from '../domain/approvals/approval-store.js';
import { changes, first, forUpdate, rows, type StoreContext } from './store-context.js';
import type { ApprovalsTable } from './store-schema.js';

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
    // BOOLEANs on PostgreSQL, 0 or 1 on SQLite.
    readOnly: Boolean(row.read_only),
    destructive: Boolean(row.destructive),
    status: row.status,
    reason: row.reason,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    ...(row.decided_at !== null ? { decidedAt: new Date(row.decided_at) } : {}),
  };
}

/**
 * The approvals part of the store, on either database. Pending approvals past their time are expired
 * by whichever reader comes first, in the reader's transaction; a decision locks the row, so the
 * first of two controllers deciding together wins and the second is told it is no longer pending.
 */
export function createSqlApprovalStore(context: StoreContext): ApprovalStore {
  const { db } = context;
  const nowMs = () => context.now().getTime();
  const expire = () =>
    changes(
      db
        .updateTable('approvals')
        .set((eb) => ({ status: 'expired', reason: EXPIRED_REASON, decided_at: eb.ref('expires_at') }))
        .where('status', '=', 'pending')
        .where('expires_at', '<=', nowMs()),
    );
  const one = (approvalId: string) => db.selectFrom('approvals').selectAll().where('approval_id', '=', approvalId);
  return {
    create(approval) {
      return context.transaction(function* () {
        const row = yield* first(
          db
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
            .returningAll(),
        );
        return toRecord(row!);
      });
    },
    get(approvalId) {
      return context.transaction(function* () {
        yield* expire();
        const row = yield* first(one(approvalId));
        return row ? toRecord(row) : undefined;
      });
    },
    list(filter) {
      return context.transaction(function* () {
        yield* expire();
        let select = db.selectFrom('approvals').selectAll();
        if (filter.agentId !== undefined) select = select.where('agent_id', '=', filter.agentId);
        if (filter.pendingOnly) select = select.where('status', '=', 'pending');
        return (yield* rows(select.orderBy('seq', 'desc').limit(filter.limit ?? 100))).map(toRecord);
      });
    },
    decide(approvalId, decision) {
      return context.transaction(function* () {
        yield* expire();
        const row = yield* first(forUpdate(context, one(approvalId)));
        if (!row) throw new ControlPlaneError('not_found', `no approval ${approvalId}`);
        if (row.status !== 'pending') {
          throw new ControlPlaneError('invalid_request', `approval ${approvalId} is no longer pending: it is ${row.status}${row.reason ? ` (${row.reason})` : ''}`);
        }
        const updated = yield* first(
          db
            .updateTable('approvals')
            .set({ status: decision.approved ? 'approved' : 'denied', reason: decision.reason ?? '', decided_at: nowMs() })
            .where('approval_id', '=', approvalId)
            .returningAll(),
        );
        return toRecord(updated!);
      });
    },
    async withdraw(approvalId, reason) {
      await context.transaction(() => changes(db.updateTable('approvals').set({ status: 'expired', reason, decided_at: nowMs() }).where('approval_id', '=', approvalId).where('status', '=', 'pending')));
    },
  };
}
