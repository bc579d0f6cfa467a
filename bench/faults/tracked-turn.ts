// The fault suite's own Turn client: counts, per call id, the calls sent and the results received,
// so a lost or doubled result, an event after a result and a stream without a status all show.
import * as grpc from '@grpc/grpc-js';
import {
  ToolSidecarServiceClient,
  TurnKind,
  type ToolResult,
  type TurnRequest,
  type TurnResponse,
} from '../../src/gen/toolruntime/v1/sidecar.js';
import { findLocalServerToken } from '../../src/local-servers.js';

/**
 * A client for `address` that takes messages as large as the sidecar may send. Without `token`, it
 * sends the token the local sidecar on `address` listed (src/local-servers.ts); `null` sends none.
 */
export function createFaultClient(address: string, options: { token?: string | null } = {}): ToolSidecarServiceClient {
  const interceptors: grpc.Interceptor[] = [];
  const token = options.token === undefined ? findLocalServerToken(address, { kind: 'sidecar' }) : options.token;
  if (token) {
    interceptors.push((callOptions, nextCall) =>
      new grpc.InterceptingCall(nextCall(callOptions), {
        start(metadata, listener, next) {
          metadata.set('authorization', `Bearer ${token}`);
          next(metadata, listener);
        },
      }),
    );
  }
  return new ToolSidecarServiceClient(address, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    interceptors,
  });
}

/** The `open` request for a text turn of `agentId`. */
export function openTurnRequest(agentId: string): TurnRequest {
  return {
    request: {
      $case: 'open',
      value: {
        context: { agentId, turnId: `fault-${Math.random().toString(36).slice(2)}`, kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: false, approvalPolicy: undefined, sandbox: undefined },
      },
    },
  };
}

/** What a tracked turn saw once its stream ended. */
export interface TurnTally {
  /** Calls sent (a reused id counts each time). */
  sent: number;
  /** Call ids with fewer results than sends. */
  lost: number;
  /** Call ids with more results than sends. */
  doubled: number;
  /** Events that came for a call after its last expected result. */
  eventsAfterResult: number;
  /** The stream's status, or `undefined` when none came within the bound. */
  status?: grpc.StatusObject;
  /** The first few call ids whose results were lost, with the events they got (for diagnosis). */
  lostCalls: Array<{ callId: string; events: string[]; kind?: string }>;
}

export interface TrackedCall {
  callId: string;
  name: string;
  argumentsJson: string;
  namespace?: string;
  deadlineMs?: number;
}

/** A Turn stream whose calls and results are counted. */
export interface TrackedTurn {
  send(call: TrackedCall): void;
  /** Cancels one call; after `end()` it does nothing. */
  cancel(callId: string, reason?: string): void;
  /** Resolves the call's next result, or `undefined` after `timeoutMs` or when the stream ends. */
  result(callId: string, timeoutMs?: number): Promise<ToolResult | undefined>;
  /** Calls whose results have not all come yet. */
  readonly pending: number;
  /** Resolves once fewer than `count` calls are pending (or the stream ended). */
  pendingBelow(count: number): Promise<void>;
  /** Every event of `callId` received so far. */
  events(callId: string): TurnResponse['event'][];
  /** Half-closes, waits (at most `timeoutMs`) for the status and tallies. */
  end(timeoutMs?: number): Promise<TurnTally>;
  /** Cancels the RPC (the client vanishing) and tallies without expecting the results. */
  cancelRpc(): Promise<grpc.StatusObject | undefined>;
}

/** Opens a Turn for `agentId` and resolves once the tool set came (rejects on a status first). */
export async function openTrackedTurn(client: ToolSidecarServiceClient, agentId: string): Promise<TrackedTurn> {
  const stream = client.turn();
  const sends = new Map<string, number>();
  const received = new Map<string, number>();
  const eventsOf = new Map<string, TurnResponse['event'][]>();
  const waiters = new Map<string, Array<(result: ToolResult | undefined) => void>>();
  const lowWaiters: Array<{ count: number; resolve: () => void }> = [];
  let pending = 0;
  let eventsAfterResult = 0;
  let finalStatus: grpc.StatusObject | undefined;
  let ended = false;
  // Writing after `end()` would error the client's own stream (and lose its status): refused here.
  let halfClosed = false;
  const statusPromise = new Promise<grpc.StatusObject>((resolve) =>
    stream.on('status', (status: grpc.StatusObject) => {
      finalStatus = status;
      ended = true;
      for (const list of waiters.values()) for (const wake of list.splice(0)) wake(undefined);
      for (const waiter of lowWaiters.splice(0)) waiter.resolve();
      resolve(status);
    }),
  );
  stream.on('error', () => {});
  let toolSetSeen!: () => void;
  const toolSet = new Promise<void>((resolve, reject) => {
    toolSetSeen = resolve;
    void statusPromise.then((status) => reject(new Error(`the turn ended before its tool set: ${status.code} ${status.details}`)));
  });
  stream.on('data', (response: TurnResponse) => {
    if (response.event?.$case === 'toolSet') return toolSetSeen();
    const { callId } = response;
    const got = received.get(callId) ?? 0;
    if (got >= (sends.get(callId) ?? 0)) eventsAfterResult++;
    let list = eventsOf.get(callId);
    if (!list) eventsOf.set(callId, (list = []));
    if (list.length < 64) list.push(response.event);
    if (response.event?.$case !== 'result') return;
    received.set(callId, got + 1);
    if (got + 1 <= (sends.get(callId) ?? 0)) pending--;
    waiters.get(callId)?.shift()?.(response.event.value);
    for (let index = lowWaiters.length - 1; index >= 0; index--) {
      const waiter = lowWaiters[index]!;
      if (pending < waiter.count) {
        lowWaiters.splice(index, 1);
        waiter.resolve();
      }
    }
  });
  stream.write(openTurnRequest(agentId));
  await toolSet;

  const tally = (status: grpc.StatusObject | undefined): TurnTally => {
    let lost = 0;
    let doubled = 0;
    const lostCalls: TurnTally['lostCalls'] = [];
    let sent = 0;
    for (const [callId, count] of sends) {
      sent += count;
      const got = received.get(callId) ?? 0;
      if (got < count) {
        lost++;
        if (lostCalls.length < 10) lostCalls.push({ callId, events: (eventsOf.get(callId) ?? []).map((event) => event?.$case ?? 'empty') });
      }
      if (got > count) doubled++;
    }
    for (const callId of received.keys()) if (!sends.has(callId)) doubled++;
    return { sent, lost, doubled, eventsAfterResult, status, lostCalls };
  };
  const statusWithin = async (timeoutMs: number) => {
    let timer: NodeJS.Timeout | undefined;
    const status = await Promise.race([statusPromise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)))]);
    clearTimeout(timer);
    return status;
  };

  return {
    get pending() {
      return pending;
    },
    send(call) {
      if (halfClosed) throw new Error(`call ${call.callId} sent after the turn was half-closed`);
      sends.set(call.callId, (sends.get(call.callId) ?? 0) + 1);
      pending++;
      stream.write({
        request: {
          $case: 'call',
          value: { callId: call.callId, name: call.name, namespace: call.namespace ?? '', argumentsJson: call.argumentsJson, deadlineMs: call.deadlineMs ?? 0, traceparent: '', tracestate: '' },
        },
      });
    },
    cancel(callId, reason = '') {
      if (halfClosed || ended) return;
      stream.write({ request: { $case: 'cancel', value: { callId, reason } } });
    },
    result(callId, timeoutMs = 30_000) {
      if (ended) return Promise.resolve(undefined);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(undefined), timeoutMs);
        let list = waiters.get(callId);
        if (!list) waiters.set(callId, (list = []));
        list.push((result) => {
          clearTimeout(timer);
          resolve(result);
        });
      });
    },
    pendingBelow(count) {
      if (pending < count || ended) return Promise.resolve();
      return new Promise((resolve) => lowWaiters.push({ count, resolve }));
    },
    events(callId) {
      return eventsOf.get(callId) ?? [];
    },
    async end(timeoutMs = 60_000) {
      halfClosed = true;
      stream.end();
      return tally(await statusWithin(timeoutMs));
    },
    async cancelRpc() {
      stream.cancel();
      return statusWithin(10_000);
    },
  };
}
