import { ToolRuntimeError } from '../../src/index.js';
import { ControlRequest, type ControlReply } from '../../src/gen/toolruntime/v1/control_plane.js';
import type { SidecarLimits } from '../sidecar-limits.js';
import type { ApprovalRequestInfo, ClientReplyPayload, ClientRequestPayload, TurnEvent } from './turn-event.js';

/**
 * How a tool of a turn whose client declared `control_plane` reaches the control plane: a typed
 * request on the turn's own stream, answered by the client as the turn's agent.
 */
export interface ControlChannel {
  /**
   * Sends `request` on behalf of the call `callId` and resolves the client's reply (a ControlError
   * reply resolves too: it is an answer). Pass the call's own signal (`context.signal`): the wait
   * ends when it aborts (cancel, deadline, the turn's end), rejecting with its reason.
   *
   * @throws ToolRuntimeError `invalid_request` when the call is not running, has sent too many
   *   requests, the turn has too many waiting, the request is too large, or the client's reply is
   *   too large or not a control reply.
   */
  request(callId: string, request: ControlRequest, signal: AbortSignal): Promise<ControlReply>;
}

/** The bounds on one turn's reverse requests (a part of `SidecarLimits`). */
export type ClientRequestLimits = Pick<SidecarLimits, 'maxClientRequestsPerCall' | 'maxPendingClientRequestsPerTurn' | 'maxClientMessageBytes'>;

/** One turn's reverse requests: sends them as turn events and routes the client's replies. */
export interface ClientRequests {
  /** The control channel the turn's categories get (when the client declared `control_plane`). */
  readonly channel: ControlChannel;
  /** Asks the client whether a validated call may run; resolves its decision. Rejects as `request` does. */
  approve(callId: string, approval: ApprovalRequestInfo, signal: AbortSignal): Promise<{ approved: boolean; reason: string }>;
  /** Where requests go: the session's event queue. Requests sent before it is attached wait for it. */
  attach(push: (event: TurnEvent) => void, isRunning: (callId: string) => boolean): void;
  /**
   * Routes one reply by its request id. An unknown or already answered id is ignored (returns
   * false). `sizeBytes` is the reply's encoded size: over the limit, the request fails.
   */
  reply(requestId: string, reply: ClientReplyPayload | undefined, sizeBytes: number): boolean;
  /** The call ended: forgets its count and fails whatever it still waits for. */
  callEnded(callId: string): void;
  /**
   * The client can no longer reply (it half-closed its side of the stream): fails every waiting
   * request and every later one at once with `reason`, rather than let calls wait for their deadline.
   */
  close(reason: string): void;
  /** Requests waiting for a reply. */
  readonly pending: number;
}

interface Pending {
  callId: string;
  kind: ClientRequestPayload['kind'];
  resolve(reply: ClientReplyPayload): void;
  reject(error: unknown): void;
}

/** Creates the reverse-request state of one turn. Request ids are `r1`, `r2`, … within the turn. */
export function createClientRequests(options: { limits: ClientRequestLimits }): ClientRequests {
  const { limits } = options;
  const pending = new Map<string, Pending>();
  const perCall = new Map<string, number>();
  let push: ((event: TurnEvent) => void) | undefined;
  let isRunning: (callId: string) => boolean = () => true;
  let nextId = 1;
  let closedReason: string | undefined;

  const send = (callId: string, payload: ClientRequestPayload, signal: AbortSignal): Promise<ClientReplyPayload> => {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (closedReason !== undefined) return Promise.reject(new ToolRuntimeError('invalid_request', closedReason));
    if (!push || !isRunning(callId)) {
      return Promise.reject(new ToolRuntimeError('invalid_request', `call "${callId}" is not running in this turn, so it cannot ask the client anything`));
    }
    const sent = perCall.get(callId) ?? 0;
    if (sent >= limits.maxClientRequestsPerCall) {
      return Promise.reject(
        new ToolRuntimeError('invalid_request', `this call already asked the client ${sent} times (the limit is ${limits.maxClientRequestsPerCall})`),
      );
    }
    if (pending.size >= limits.maxPendingClientRequestsPerTurn) {
      return Promise.reject(
        new ToolRuntimeError('invalid_request', `this turn already waits for ${pending.size} client replies (the limit is ${limits.maxPendingClientRequestsPerTurn})`),
      );
    }
    if (payload.kind === 'control') {
      const size = ControlRequest.encode(payload.control).finish().length;
      if (size > limits.maxClientMessageBytes) {
        return Promise.reject(new ToolRuntimeError('invalid_request', `the control request is ${size} bytes, over the limit of ${limits.maxClientMessageBytes}`));
      }
    }
    perCall.set(callId, sent + 1);
    const requestId = `r${nextId++}`;
    const emit = push;
    return new Promise<ClientReplyPayload>((resolve, reject) => {
      const onAbort = () => {
        pending.delete(requestId);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const done = () => {
        pending.delete(requestId);
        signal.removeEventListener('abort', onAbort);
      };
      pending.set(requestId, {
        callId,
        kind: payload.kind,
        resolve: (reply) => {
          done();
          resolve(reply);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      emit({ type: 'client-request', callId, requestId, request: payload });
    });
  };

  return {
    channel: {
      async request(callId, request, signal) {
        const reply = await send(callId, { kind: 'control', control: request }, signal);
        if (reply.kind !== 'control') throw new ToolRuntimeError('invalid_request', 'the client answered a control request with an approval decision');
        return reply.control;
      },
    },
    async approve(callId, approval, signal) {
      const reply = await send(callId, { kind: 'approval', approval }, signal);
      if (reply.kind !== 'approval') return { approved: false, reason: 'the client answered the approval request with something other than a decision' };
      return { approved: reply.approved, reason: reply.reason };
    },
    attach(target, running) {
      push = target;
      isRunning = running;
    },
    reply(requestId, reply, sizeBytes) {
      const waiting = pending.get(requestId);
      if (!waiting) return false;
      if (sizeBytes > limits.maxClientMessageBytes) {
        waiting.reject(new ToolRuntimeError('invalid_request', `the client's reply was ${sizeBytes} bytes, over the limit of ${limits.maxClientMessageBytes}`));
      } else if (!reply) {
        waiting.reject(new ToolRuntimeError('invalid_request', 'the client sent an empty reply'));
      } else {
        waiting.resolve(reply);
      }
      return true;
    },
    callEnded(callId) {
      // Every call passes here: nothing to allocate when the call never asked anything.
      if (!perCall.delete(callId) || pending.size === 0) return;
      for (const waiting of [...pending.values()]) {
        if (waiting.callId === callId) waiting.reject(new ToolRuntimeError('aborted', 'the call ended before the client replied'));
      }
    },
    close(reason) {
      closedReason = reason;
      for (const waiting of [...pending.values()]) waiting.reject(new ToolRuntimeError('invalid_request', reason));
    },
    get pending() {
      return pending.size;
    },
  };
}
