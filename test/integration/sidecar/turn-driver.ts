// A small test driver over the generated client: opens a Turn, sends calls, collects events per call.
import * as grpc from '@grpc/grpc-js';
import {
  ToolSidecarServiceClient,
  TurnKind,
  type ToolResult,
  type ToolSet,
  type TurnContext,
  type TurnRequest,
  type TurnResponse,
} from '../../../src/gen/toolruntime/v1/sidecar.js';
import { findLocalServerToken } from '../../../src/local-servers.js';

export interface CallRecord {
  events: TurnResponse['event'][];
  result?: ToolResult;
}

export interface TurnDriver {
  toolSet: ToolSet;
  call(callId: string, name: string, args: unknown, options?: { deadlineMs?: number; namespace?: string }): Promise<ToolResult>;
  cancel(callId: string, reason?: string): void;
  record(callId: string): CallRecord;
  /** Half-closes and waits for the stream to end; resolves the final status. */
  end(): Promise<grpc.StatusObject>;
  stream: grpc.ClientDuplexStream<TurnRequest, TurnResponse>;
  /** Every response received, in order. */
  responses: TurnResponse[];
  status: Promise<grpc.StatusObject>;
}

/**
 * A client of the sidecar at `address`. Without `token`, the token of the local sidecar registered
 * on that address (a CLI sidecar generates one and lists it: src/local-servers.ts); `null` sends none.
 */
export function createClient(address: string, token?: string | null): ToolSidecarServiceClient {
  const sent = token === undefined ? findLocalServerToken(address, { kind: 'sidecar' }) : token;
  return new ToolSidecarServiceClient(address, grpc.credentials.createInsecure(), {
    interceptors: sent ? [bearer(sent)] : [],
  });
}

/** Client options that send the token of the local sidecar registered on `address` (none when none is). */
export function localTokenOptions(address: string): grpc.ClientOptions {
  const token = findLocalServerToken(address, { kind: 'sidecar' });
  return { interceptors: token ? [bearer(token)] : [] };
}

export function bearer(token: string): grpc.Interceptor {
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set('authorization', `Bearer ${token}`);
        next(metadata, listener);
      },
    });
}

export function openRequest(agentId: string, kind = TurnKind.TURN_KIND_TEXT, context: Partial<TurnContext> = {}): TurnRequest {
  return {
    request: {
      $case: 'open',
      value: { context: { agentId, turnId: `turn-${Math.random()}`, kind, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: false, approvalPolicy: undefined, sandbox: undefined, ...context } },
    },
  };
}

/** Opens a Turn for `agentId` (with `context` over the defaults) and resolves once the tool set arrived. */
export async function openTurn(client: ToolSidecarServiceClient, agentId: string, kind = TurnKind.TURN_KIND_TEXT, context: Partial<TurnContext> = {}): Promise<TurnDriver> {
  const stream = client.turn();
  const responses: TurnResponse[] = [];
  const records = new Map<string, CallRecord>();
  const waiters = new Map<string, (result: ToolResult) => void>();
  const record = (callId: string) => {
    let found = records.get(callId);
    if (!found) records.set(callId, (found = { events: [] }));
    return found;
  };
  let resolveToolSet!: (set: ToolSet) => void;
  let rejectToolSet!: (error: Error) => void;
  const toolSet = new Promise<ToolSet>((resolve, reject) => {
    resolveToolSet = resolve;
    rejectToolSet = reject;
  });
  const status = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
  stream.on('error', (error) => rejectToolSet(error));
  stream.on('data', (response: TurnResponse) => {
    responses.push(response);
    if (response.event?.$case === 'toolSet') return resolveToolSet(response.event.value);
    const entry = record(response.callId);
    entry.events.push(response.event);
    if (response.event?.$case === 'result') {
      entry.result = response.event.value;
      waiters.get(response.callId)?.(response.event.value);
    }
  });
  stream.write(openRequest(agentId, kind, context));
  const set = await toolSet;
  return {
    toolSet: set,
    stream,
    responses,
    status,
    record,
    call(callId, name, args, options = {}) {
      const done = new Promise<ToolResult>((resolve) => waiters.set(callId, resolve));
      stream.write({
        request: {
          $case: 'call',
          value: {
            callId,
            name,
            namespace: options.namespace ?? '',
            argumentsJson: typeof args === 'string' ? args : JSON.stringify(args),
            deadlineMs: options.deadlineMs ?? 0,
            traceparent: '',
            tracestate: '',
          },
        },
      });
      return done;
    },
    cancel(callId, reason = '') {
      stream.write({ request: { $case: 'cancel', value: { callId, reason } } });
    },
    async end() {
      stream.end();
      return status;
    },
  };
}

export function textOf(result: ToolResult): string {
  return result.content.map((part) => (part.part?.$case === 'text' ? part.part.value : '')).join('');
}
