import { chmod } from 'node:fs/promises';
import type { SessionOperations } from './session-operations.js';
import * as grpc from '@grpc/grpc-js';
import { errorMessage, ToolRuntimeError, type Logger } from '../../../src/index.js';
import {
  ControlPlaneServiceService,
  type ControlPlaneServiceServer,
  type ControlReply,
  type ControlRequest,
  type DecideApprovalRequest,
  type DecideApprovalResponse,
  type ListApprovalsRequest,
  type ListApprovalsResponse,
} from '../../../src/gen/toolruntime/v1/control_plane.js';
import { isControlPlaneError } from '../domain/control-plane-error.js';
import { createTokenInterceptor } from '../../../src/grpc-server/auth-interceptor.js';
import type { StoreHealth } from '../domain/control-plane-store.js';
import { createSidecarHealth } from '../../../src/grpc-server/health-service.js';
import { addLazyReflection } from '../../../src/grpc-server/lazy-reflection.js';
import { bindFailureMessage } from '../../../src/cli-usage.js';
import { boundAddress } from '../../../src/grpc-server/listen-address.js';

const SERVICE_NAME = 'toolruntime.v1.ControlPlaneService';

/** Answers one operator request (no acting agent: the request names it). Never throws: refusals are ControlError replies. */
export type AnswerOperatorRequest = (request: ControlRequest, signal: AbortSignal) => Promise<ControlReply>;

/** Stored approvals, when the controller keeps them (otherwise those RPCs are UNIMPLEMENTED). */
export interface ApprovalOperations {
  list(request: ListApprovalsRequest): Promise<ListApprovalsResponse>;
  decide(request: DecideApprovalRequest): Promise<DecideApprovalResponse>;
}

/** The controller's gRPC server: ControlPlaneService, grpc.health.v1 and server reflection. */
export interface ControlPlaneServer {
  /**
   * Binds `address` and serves; resolves the real bound address (the real port for `:0`).
   *
   * A `unix:PATH` socket is made mode 0600 once bound (the token is still required on it).
   *
   * @throws ToolRuntimeError `invalid_request` when already listening or the socket's mode cannot
   *   be set; the bind error otherwise.
   */
  listen(address: string): Promise<string>;
  /**
   * Reports NOT_SERVING on the health service while RPCs are still answered: the controller is
   * draining (a load balancer or readiness probe takes it out; a liveness probe still sees it answer).
   */
  drain(): void;
  /** Reports NOT_SERVING, refuses new RPCs, waits up to `graceMs` (default 5 s) for running ones, then ends them. */
  close(options?: { graceMs?: number }): Promise<void>;
}

const statusOfControlCode: Record<string, grpc.status> = {
  invalid_request: grpc.status.INVALID_ARGUMENT,
  not_found: grpc.status.NOT_FOUND,
  permission_denied: grpc.status.PERMISSION_DENIED,
  limit_exceeded: grpc.status.RESOURCE_EXHAUSTED,
  unavailable: grpc.status.UNAVAILABLE,
  internal: grpc.status.INTERNAL,
};

/**
 * Creates the ControlPlaneService server. Every RPC is wrapped into the ControlRequest the Turn
 * stream carries and answered by `answer`, so operators and agents' tools share one code path; a
 * ControlError becomes the status of its code (INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED,
 * RESOURCE_EXHAUSTED, UNAVAILABLE, INTERNAL) with its message. Every RPC (health and reflection
 * included) needs `authorization: Bearer <token>`, on every address, loopback and unix sockets
 * included: a process of the agent's on the same machine must not drive the control plane.
 *
 * @throws ToolRuntimeError `invalid_request` for an empty token.
 */
export function createControlPlaneServer(options: {
  answer: AnswerOperatorRequest;
  approvals?: ApprovalOperations;
  /** Sessions (turn journals of conversations), when the controller runs them (otherwise those RPCs are UNIMPLEMENTED). */
  sessions?: SessionOperations;
  /** The bearer token every RPC needs (`--token-file`'s, or one `serve` generated). */
  token: string;
  logger: Logger;
  /** The store's health (`ControlPlaneStore.watchHealth`): while its database is lost, health says NOT_SERVING. */
  watchStoreHealth?: (listener: (health: StoreHealth) => void) => () => void;
}): ControlPlaneServer {
  const { logger } = options;
  if (!options.token) throw new ToolRuntimeError('invalid_request', 'the control-plane server needs a token: every RPC must carry a credential');
  const server = new grpc.Server({ interceptors: [createTokenInterceptor(options.token)] });
  const calls = new Set<AbortController>();

  function unary<Req, Res>(wrap: (request: Req) => ControlRequest, unwrap: (reply: ControlReply) => Res | undefined): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      const controller = new AbortController();
      calls.add(controller);
      call.on('cancelled', () => controller.abort(new ToolRuntimeError('aborted', 'the client cancelled the RPC')));
      options
        .answer(wrap(call.request), controller.signal)
        .then((reply) => {
          if (reply.reply?.$case === 'error') {
            const { code, message } = reply.reply.value;
            callback({ code: statusOfControlCode[code] ?? grpc.status.UNKNOWN, details: message });
            return;
          }
          const value = unwrap(reply);
          if (value === undefined) callback({ code: grpc.status.INTERNAL, details: 'the control plane gave no answer for this RPC' });
          else callback(null, value);
        })
        .catch((error: unknown) => {
          logger.error('control-plane RPC failed', { error: errorMessage(error) });
          callback({ code: grpc.status.INTERNAL, details: errorMessage(error) });
        })
        .finally(() => calls.delete(controller));
    };
  }
  // One RPC per ControlRequest case, request and reply under the same case name.
  const rpc = <C extends NonNullable<ControlRequest['request']>['$case']>(name: C) =>
    unary(
      (value: Extract<NonNullable<ControlRequest['request']>, { $case: C }>['value']) => ({ request: { $case: name, value } }) as ControlRequest,
      (reply) => (reply.reply?.$case === name ? (reply.reply.value as Extract<NonNullable<ControlReply['reply']>, { $case: C }>['value']) : undefined),
    );
  // A refusal (unknown id, already decided) keeps its code; anything else is INTERNAL.
  const approvalError = (error: unknown) => ({
    code: (isControlPlaneError(error) && statusOfControlCode[error.controlCode]) || grpc.status.INTERNAL,
    details: errorMessage(error),
  });
  const approvalsMissing = (callback: grpc.sendUnaryData<never>) =>
    callback({ code: grpc.status.UNIMPLEMENTED, details: 'this controller keeps no stored approvals' });

  const sessionCall = <T>(callback: grpc.sendUnaryData<T>, work: (sessions: SessionOperations) => Promise<T>) => {
    if (!options.sessions) return callback({ code: grpc.status.UNIMPLEMENTED, details: 'this controller runs no sessions' });
    work(options.sessions).then((value) => callback(null, value), (error: unknown) => callback(approvalError(error)));
  };
  const implementation: ControlPlaneServiceServer = {
    startWorkflow: rpc('startWorkflow'),
    showWorkflow: rpc('showWorkflow'),
    listWorkflows: rpc('listWorkflows'),
    cancelWorkflow: rpc('cancelWorkflow'),
    createSchedule: rpc('createSchedule'),
    listSchedules: rpc('listSchedules'),
    deleteSchedule: rpc('deleteSchedule'),
    startJob: rpc('startJob'),
    listJobs: rpc('listJobs'),
    showJob: rpc('showJob'),
    cancelJob: rpc('cancelJob'),
    listApprovals: (call, callback) => {
      if (!options.approvals) return approvalsMissing(callback as grpc.sendUnaryData<never>);
      options.approvals.list(call.request).then((value) => callback(null, value), (error: unknown) => callback(approvalError(error)));
    },
    decideApproval: (call, callback) => {
      if (!options.approvals) return approvalsMissing(callback as grpc.sendUnaryData<never>);
      options.approvals.decide(call.request).then((value) => callback(null, value), (error: unknown) => callback(approvalError(error)));
    },
    listSessions: (call, callback) => sessionCall(callback, (sessions) => sessions.list(call.request)),
    showSession: (call, callback) => sessionCall(callback, (sessions) => sessions.show(call.request)),
    continueSession: (call, callback) => sessionCall(callback, (sessions) => sessions.continue(call.request)),
  };
  server.addService(ControlPlaneServiceService, implementation);
  const health = createSidecarHealth({ '': 'SERVING', [SERVICE_NAME]: 'SERVING' });
  health.addToServer(server);
  // NOT_SERVING while draining or closing, and while the store's database is lost (a readiness
  // probe takes the controller out; its RPCs would fail anyway).
  let draining = false;
  let storeOk = true;
  const showHealth = () => {
    const status = draining || !storeOk ? 'NOT_SERVING' : 'SERVING';
    health.setStatus('', status);
    health.setStatus(SERVICE_NAME, status);
  };
  const unwatchStore = options.watchStoreHealth?.((store) => {
    storeOk = store.ok;
    showHealth();
  });
  // Loaded on the first reflection request, as the sidecar does.
  addLazyReflection(server, { services: [SERVICE_NAME, 'grpc.health.v1.Health'] });
  let listening = false;
  let closing: Promise<void> | undefined;

  return {
    async listen(address) {
      if (listening) throw new ToolRuntimeError('invalid_request', 'the control-plane server is already listening');
      listening = true;
      const port = await new Promise<number>((resolve, reject) => {
        server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound)));
      }).catch(async (error: unknown) => {
        listening = false;
        throw new Error(await bindFailureMessage(address, '--listen', error), { cause: error });
      });
      // Only this user may connect to a unix socket (as Docker's): other users are refused by the
      // kernel before the token is even asked for. Between bind and chmod the umask's mode applies,
      // which the token still covers.
      if (address.startsWith('unix:')) {
        const path = address.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
        await chmod(path, 0o600).catch((error: unknown) => {
          server.forceShutdown();
          throw new ToolRuntimeError('invalid_request', `cannot make the control-plane socket ${path} private (mode 0600): ${errorMessage(error)}`);
        });
      }
      return boundAddress(address, port);
    },
    drain() {
      draining = true;
      showHealth();
    },
    close({ graceMs = 5_000 } = {}) {
      closing ??= (async () => {
        draining = true;
        unwatchStore?.();
        showHealth();
        const shutdown = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([shutdown, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
        clearTimeout(timer);
        for (const call of calls) call.abort(new ToolRuntimeError('aborted', 'the controller is shutting down'));
        server.forceShutdown();
      })();
      return closing;
    },
  };
}
