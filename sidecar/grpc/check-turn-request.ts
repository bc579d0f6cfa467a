// Bounds on the proto-shaped parts of Turn requests (the open's context, reverse-request replies);
// the limits and the call-level checks are in ../turn/bound-request.ts.
import { ControlReply } from '../../src/gen/toolruntime/v1/control_plane.js';
import type { ClientReply, TurnContext } from '../../src/gen/toolruntime/v1/sidecar.js';
import { boundApprovalReason, bytesOver, checkClientReply, quotePrefix, REQUEST_LIMITS } from '../turn/bound-request.js';

function checkList(field: string, values: readonly string[]): string | undefined {
  if (values.length > REQUEST_LIMITS.listEntries) return `${field} has ${values.length} entries, over the limit of ${REQUEST_LIMITS.listEntries}`;
  for (const value of values) {
    const bytes = bytesOver(value, REQUEST_LIMITS.listEntryBytes);
    if (bytes > 0) return `an entry of ${field} is ${bytes} bytes, over the limit of ${REQUEST_LIMITS.listEntryBytes} (it starts ${quotePrefix(value)})`;
  }
  return undefined;
}

/**
 * Checks an `open`'s context against `REQUEST_LIMITS`: agent and turn ids, labels, enabled skills,
 * the result schema, the approval policy's tool names. Returns why it is refused (for an
 * INVALID_ARGUMENT status, quoting only prefixes), or `undefined`. Never throws.
 */
export function checkTurnContext(context: TurnContext | undefined): string | undefined {
  if (!context) return undefined;
  for (const [field, value] of [
    ['agent_id', context.agentId],
    ['turn_id', context.turnId],
  ] as const) {
    const bytes = bytesOver(value, REQUEST_LIMITS.contextIdBytes);
    if (bytes > 0) return `${field} is ${bytes} bytes, over the limit of ${REQUEST_LIMITS.contextIdBytes} (it starts ${quotePrefix(value)})`;
  }
  const labels = Object.entries(context.labels ?? {});
  if (labels.length > REQUEST_LIMITS.labels) return `labels has ${labels.length} entries, over the limit of ${REQUEST_LIMITS.labels}`;
  for (const [key, value] of labels) {
    if (bytesOver(key, REQUEST_LIMITS.labelBytes) > 0 || bytesOver(value, REQUEST_LIMITS.labelBytes) > 0) {
      return `label ${quotePrefix(key)} is over the limit of ${REQUEST_LIMITS.labelBytes} bytes for a key or a value`;
    }
  }
  const schemaBytes = bytesOver(context.resultSchemaJson ?? '', REQUEST_LIMITS.resultSchemaBytes);
  if (schemaBytes > 0) return `result_schema_json is ${schemaBytes} bytes, over the limit of ${REQUEST_LIMITS.resultSchemaBytes}`;
  return checkList('enabled_skills', context.enabledSkills ?? []) ?? checkList('approval_policy.tool_names', context.approvalPolicy?.toolNames ?? []);
}

/** A reverse-request reply as checked: refused (to be ignored, with why), or within bounds. */
export type CheckedClientReply = { ok: true; reply: ClientReply } | { ok: false; reason: string };

/**
 * Checks a `reply` against `REQUEST_LIMITS` (a control reply against `maxControlReplyBytes`, the
 * sidecar's `--max-client-message-bytes`, when given): an oversized request_id or control reply is refused
 * (the reply is to be ignored and logged; the call's request then ends as any unanswered one
 * does), an approval reason is cut. Never throws.
 */
export function checkTurnReply(reply: ClientReply, maxControlReplyBytes?: number): CheckedClientReply {
  const controlReplyBytes = reply.reply?.$case === 'control' ? ControlReply.encode(reply.reply.value).finish().length : undefined;
  const refused = checkClientReply({ requestId: reply.requestId, controlReplyBytes }, maxControlReplyBytes);
  if (refused !== undefined) return { ok: false, reason: refused };
  if (reply.reply?.$case === 'approval' && reply.reply.value.reason.length > REQUEST_LIMITS.approvalReasonChars) {
    return { ok: true, reply: { ...reply, reply: { $case: 'approval', value: { ...reply.reply.value, reason: boundApprovalReason(reply.reply.value.reason) } } } };
  }
  return { ok: true, reply };
}
