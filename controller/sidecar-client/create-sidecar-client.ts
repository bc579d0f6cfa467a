import { credentials, Metadata, type ChannelCredentials } from '@grpc/grpc-js';
import { ToolSidecarServiceClient } from '../../src/gen/toolruntime/v1/sidecar.js';
import { findLocalServerToken } from '../../src/local-servers.js';
import { controllerTelemetry, type TurnTrace } from '../telemetry/controller-telemetry.js';
import { SidecarTurn, type OpenTurnOptions } from './sidecar-turn.js';
import type { TurnContextInput } from './sidecar-types.js';

/** How to reach a sidecar. */
export interface SidecarClientOptions {
  /** `host:port` (or `unix:/path`). */
  address: string;
  /**
   * Sent as `authorization: Bearer <token>` on every RPC. Absent: the token of the local sidecar
   * registered on `address` in the runtime folder (src/local-servers.ts), if one is; `null`: none.
   */
  token?: string | null;
  /** TLS material (PEM); plaintext when absent. */
  tls?: { ca?: Buffer | string; cert?: Buffer | string; key?: Buffer | string };
  /** Largest message either way (default 16 MiB, the sidecar's default). */
  maxMessageBytes?: number;
}

/** A connection to one sidecar; open one turn per agent turn on it. */
export interface SidecarClient {
  /**
   * Opens a Turn stream, sends `context` and waits (bounded) for the tool set. `onClientRequest`
   * answers the sidecar's control and approval requests for the turn's calls.
   *
   * @throws ToolRuntimeError `sidecar_unavailable` when the sidecar cannot be reached, refuses the
   *   turn or sends no tool set in time; `aborted` when `signal` aborts first.
   */
  openTurn(context: TurnContextInput, options?: OpenTurnOptions): Promise<SidecarTurn>;
  /** Closes the channel; open turns are cancelled. */
  close(): void;
}

const toBuffer = (value: Buffer | string | undefined) =>
  value === undefined ? null : typeof value === 'string' ? Buffer.from(value) : value;

/** Creates a client for the sidecar at `options.address`. Connects lazily, on the first turn. */
export function createSidecarClient(options: SidecarClientOptions): SidecarClient {
  const channelCredentials: ChannelCredentials = options.tls
    ? credentials.createSsl(toBuffer(options.tls.ca), toBuffer(options.tls.key), toBuffer(options.tls.cert))
    : credentials.createInsecure();
  const maxBytes = options.maxMessageBytes ?? 16 * 1024 * 1024;
  // A sidecar started by hand generates its token and lists it by address (sidecar/cli.ts); looked
  // up at each turn until found, so a sidecar started (or restarted) after this client is found too.
  let token = options.token ?? undefined;
  const lookUp = options.token === undefined;
  const client = new ToolSidecarServiceClient(options.address, channelCredentials, {
    'grpc.max_receive_message_length': maxBytes,
    'grpc.max_send_message_length': maxBytes,
  });
  const metadata = (trace: TurnTrace | undefined) => {
    const value = new Metadata();
    if (lookUp) token = findLocalServerToken(options.address, { kind: 'sidecar' }) ?? token;
    if (token) value.set('authorization', `Bearer ${token}`);
    // W3C trace context of the turn's invoke_agent span: the sidecar's Turn span goes under it.
    if (trace?.headers.traceparent) {
      value.set('traceparent', trace.headers.traceparent);
      if (trace.headers.tracestate) value.set('tracestate', trace.headers.tracestate);
    }
    return value;
  };
  return {
    openTurn(context, turnOptions = {}) {
      const trace = controllerTelemetry()?.beginTurn(context);
      const stream = client.turn(metadata(trace));
      const opening = SidecarTurn.open(stream, context, { maxMessageBytes: maxBytes, ...turnOptions });
      if (!trace) return opening;
      return opening.then(
        (turn) => {
          turn.trace = trace;
          void turn.ended.then(() => trace.streamEnded(turn.failure));
          return turn;
        },
        (error: unknown) => {
          trace.streamEnded(error instanceof Error ? error : new Error(String(error)));
          throw error;
        },
      );
    },
    close() {
      client.close();
    },
  };
}
