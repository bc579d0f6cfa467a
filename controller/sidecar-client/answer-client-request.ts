import { errorMessage } from '../../src/index.js';
import type { ClientReply, ClientRequest } from '../../src/gen/toolruntime/v1/sidecar.js';
import type { ApproveCallback, ClientReplyPayload, ClientRequestEvent, ClientRequestHandler } from './sidecar-types.js';

/** The reply when nobody answers control requests on this turn. */
const NO_CONTROL_PLANE = 'this client does not answer control-plane requests (it opened the turn without a control-plane handler)';
/** The reason when nobody can approve on this turn. */
const NO_APPROVER = 'nobody can approve calls on this turn (the client gave no approval handler)';

/** A proto ClientRequest as the handler's event; undefined when it carries neither kind. */
export function clientRequestEvent(callId: string, request: ClientRequest): ClientRequestEvent | undefined {
  const { requestId } = request;
  switch (request.request?.$case) {
    case 'control':
      return { callId, requestId, kind: 'control', control: request.request.value };
    case 'approval': {
      const approval = request.request.value;
      let parameters: unknown = approval.parametersJson;
      try {
        parameters = JSON.parse(approval.parametersJson);
      } catch {
        // keep the text: the person deciding still sees it
      }
      return {
        callId,
        requestId,
        kind: 'approval',
        approval: {
          toolName: approval.toolName,
          ...(approval.namespace ? { namespace: approval.namespace } : {}),
          label: approval.label,
          parameters,
          readOnly: approval.readOnly,
          destructive: approval.destructive,
        },
      };
    }
    default:
      return undefined;
  }
}

/** The answer when there is no handler, or the handler failed or answered the wrong kind. */
function fallback(kind: ClientRequestEvent['kind'], code: string, message: string): ClientReplyPayload {
  return kind === 'control'
    ? { kind: 'control', control: { reply: { $case: 'error', value: { code, message } } } }
    : { kind: 'approval', approved: false, reason: message };
}

function toClientReply(requestId: string, payload: ClientReplyPayload): ClientReply {
  return payload.kind === 'control'
    ? { requestId, reply: { $case: 'control', value: payload.control } }
    : { requestId, reply: { $case: 'approval', value: { approved: payload.approved, reason: payload.reason ?? '' } } };
}

/**
 * One handler from the two ways a turn's opener answers: `approve` takes the approval requests
 * (before `handler`), `handler` everything else. Undefined when neither is given.
 */
export function combineHandlers(handler: ClientRequestHandler | undefined, approve: ApproveCallback | undefined): ClientRequestHandler | undefined {
  if (!approve) return handler;
  return async (request, signal) => {
    if (request.kind !== 'approval') {
      if (handler) return handler(request, signal);
      return fallback('control', 'unavailable', NO_CONTROL_PLANE);
    }
    const decision = await approve(request, signal);
    return { kind: 'approval', approved: decision.approved === true, ...(decision.reason ? { reason: decision.reason } : {}) };
  };
}

/**
 * Answers one reverse request: asks `handler` (when there is one) and builds the ClientReply.
 * Never rejects: without a handler a control request gets ControlError `unavailable` and an
 * approval a denial; a handler that throws gives `internal` / a denial with its message; a reply of
 * the wrong kind is replaced the same way. Resolves undefined when the request carries nothing to
 * answer, or when `signal` aborted while the handler ran (the call is over: nothing to send).
 */
export async function answerClientRequest(options: {
  callId: string;
  request: ClientRequest;
  handler: ClientRequestHandler | undefined;
  signal: AbortSignal;
}): Promise<ClientReply | undefined> {
  const event = clientRequestEvent(options.callId, options.request);
  if (!event) return undefined;
  let payload: ClientReplyPayload;
  if (!options.handler) {
    payload = fallback(event.kind, 'unavailable', event.kind === 'control' ? NO_CONTROL_PLANE : NO_APPROVER);
  } else {
    try {
      payload = await options.handler(event, options.signal);
      if (payload?.kind !== event.kind) {
        payload = fallback(event.kind, 'internal', `the client's handler answered a ${event.kind} request with ${payload?.kind ?? 'nothing'}`);
      }
    } catch (error) {
      payload = fallback(event.kind, 'internal', `the client failed to answer: ${errorMessage(error)}`);
    }
  }
  if (options.signal.aborted) return undefined;
  return toClientReply(event.requestId, payload);
}
