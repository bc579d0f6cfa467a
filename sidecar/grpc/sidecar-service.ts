import { status, type ServerDuplexStream, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import type { Logger } from '../../src/logger.js';
import { importOnFirstUse } from '../../src/load-on-first-use.js';
import type {
  AssembleToolsRequest,
  AssembleToolsResponse,
  ToolSidecarServiceServer,
  TurnRequest,
  TurnResponse,
} from '../../src/gen/toolruntime/v1/sidecar.js';
import type { Catalogs, TurnContext } from '../categories/category.js';
import type { CategoryConfig } from '../categories/category-config.js';
import { checkTurnContext } from './check-turn-request.js';
import type { SidecarTelemetry } from '../telemetry/sidecar-telemetry.js';
import { readTraceHeaders, type TraceHeaders } from '../telemetry/trace-headers.js';
import { toGrpcStatus } from './grpc-status.js';
import { toDomainTurnContext } from './proto-mapping.js';
import { handleTurn, type OpenedTurn, type TurnHandle } from './turn-handler.js';

/** The ToolSidecarService implementation, and the live turns it serves (for draining). */
export interface SidecarService {
  implementation: ToolSidecarServiceServer;
  turns: Set<TurnHandle>;
}

/** Builds the ToolSidecarService over the catalogs: AssembleTools and Turn. */
export function createSidecarService(options: { catalogs: Catalogs; config: CategoryConfig; logger: Logger; telemetry?: SidecarTelemetry }): SidecarService {
  const { catalogs, config, logger, telemetry } = options;
  const turns = new Set<TurnHandle>();

  const openOptions = { catalogs, config, logger, ...(telemetry ? { telemetry } : {}) };
  // The turn layer (zod, the argument ladder, the session) loads with the first turn, not before
  // the listening line: an idle sidecar does not hold it. A failed load fails that turn; the next tries again.
  const load = importOnFirstUse(() => import('./open-turn.js'));
  const open = async (turn: TurnContext, signal: AbortSignal, traceHeaders?: TraceHeaders): Promise<OpenedTurn> => (await load()).openTurn(openOptions, turn, signal, traceHeaders);

  const implementation: ToolSidecarServiceServer = {
    assembleTools(call: ServerUnaryCall<AssembleToolsRequest, AssembleToolsResponse>, callback: sendUnaryData<AssembleToolsResponse>) {
      const outOfBounds = checkTurnContext(call.request.context);
      if (outOfBounds !== undefined) {
        callback({ code: status.INVALID_ARGUMENT, details: `the turn's context is refused: ${outOfBounds}`, name: 'AssembleToolsError', message: outOfBounds });
        return;
      }
      const controller = new AbortController();
      call.on('cancelled', () => controller.abort());
      load()
        .then(({ assembleTools }) => assembleTools(openOptions, toDomainTurnContext(call.request.context), controller.signal))
        .then(
          (response) => callback(null, response),
          (error: unknown) => callback({ ...toGrpcStatus(error), name: 'AssembleToolsError', message: String(error) }),
        );
    },
    turn(stream: ServerDuplexStream<TurnRequest, TurnResponse>) {
      // With telemetry on, the client's trace context (gRPC metadata) parents the sidecar's Turn span.
      const traceHeaders = telemetry ? readTraceHeaders(stream.metadata) : undefined;
      const handle = handleTurn(stream, { open: traceHeaders ? (turn, signal) => open(turn, signal, traceHeaders) : open, logger, maxClientMessageBytes: config.limits.maxClientMessageBytes });
      turns.add(handle);
      void handle.closed.then(() => turns.delete(handle));
    },
  };
  return { implementation, turns };
}
