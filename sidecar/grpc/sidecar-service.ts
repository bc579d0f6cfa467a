import { status, type ServerDuplexStream, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { collectToolSchemas, type Logger } from '../../src/index.js';
import type {
  AssembleToolsRequest,
  AssembleToolsResponse,
  ToolSidecarServiceServer,
  TurnRequest,
  TurnResponse,
} from '../../src/gen/toolruntime/v1/sidecar.js';
import { assembleToolSet, type Catalogs, type TurnContext } from '../categories/category.js';
import type { CategoryConfig } from '../categories/category-config.js';
import { createClientRequests, type ControlChannel } from '../turn/client-requests.js';
import { createTurnSession } from '../turn/turn-session.js';
import { checkTurnContext } from './check-turn-request.js';
import type { SidecarTelemetry } from '../telemetry/sidecar-telemetry.js';
import { readTraceHeaders, type TraceHeaders } from '../telemetry/trace-headers.js';
import { toGrpcStatus } from './grpc-status.js';
import { toDomainTurnContext, toToolDefinition } from './proto-mapping.js';
import { handleTurn, type OpenedTurn, type TurnHandle } from './turn-handler.js';

/** The ToolSidecarService implementation, and the live turns it serves (for draining). */
export interface SidecarService {
  implementation: ToolSidecarServiceServer;
  turns: Set<TurnHandle>;
}

// AssembleTools opens no turn, so nothing can answer: its tools are listed, never executed.
const inspectionChannel: ControlChannel = {
  request: () => Promise.reject(new Error('AssembleTools opens no turn: there is no client to ask')),
};

/** Builds the ToolSidecarService over the catalogs: AssembleTools and Turn. */
export function createSidecarService(options: { catalogs: Catalogs; config: CategoryConfig; logger: Logger; telemetry?: SidecarTelemetry }): SidecarService {
  const { catalogs, config, logger, telemetry } = options;
  const turns = new Set<TurnHandle>();

  const assemble = async (turn: TurnContext, signal: AbortSignal, control: ControlChannel | undefined) => {
    const assembled = await assembleToolSet(catalogs, { turn, config, signal, ...(turn.controlPlane && control ? { control } : {}) });
    return { assembled, definitions: collectToolSchemas(assembled.tools).map(toToolDefinition) };
  };

  const open = async (turn: TurnContext, signal: AbortSignal, traceHeaders?: TraceHeaders): Promise<OpenedTurn> => {
    const clientRequests = createClientRequests({ limits: config.limits });
    const { assembled, definitions } = await assemble(turn, signal, clientRequests.channel);
    const logFields = { agentId: turn.agentId, turnId: turn.turnId, ...turn.labels };
    logger.info('turn opened', { ...logFields, kind: turn.kind, tools: assembled.tools.length });
    const traced = telemetry?.openTurn(turn, logger, traceHeaders);
    const session = createTurnSession({
      tools: assembled.tools,
      limits: config.limits,
      logger: traced ? traced.logger : logger,
      logFields,
      clientRequests,
      ...(turn.approvalPolicy ? { approvalPolicy: turn.approvalPolicy } : {}),
      ...(traced ? { validateArguments: traced.validateArguments } : {}),
    });
    return {
      tools: definitions,
      instructions: assembled.instructions,
      maxCallsInFlight: config.limits.maxConcurrentCallsPerTurn,
      session: traced ? traced.wrap(session) : session,
    };
  };

  const implementation: ToolSidecarServiceServer = {
    assembleTools(call: ServerUnaryCall<AssembleToolsRequest, AssembleToolsResponse>, callback: sendUnaryData<AssembleToolsResponse>) {
      const outOfBounds = checkTurnContext(call.request.context);
      if (outOfBounds !== undefined) {
        callback({ code: status.INVALID_ARGUMENT, details: `the turn's context is refused: ${outOfBounds}`, name: 'AssembleToolsError', message: outOfBounds });
        return;
      }
      const controller = new AbortController();
      call.on('cancelled', () => controller.abort());
      assemble(toDomainTurnContext(call.request.context), controller.signal, inspectionChannel).then(
        ({ assembled, definitions }) => callback(null, { tools: definitions, instructions: assembled.instructions, maxCallsInFlight: config.limits.maxConcurrentCallsPerTurn }),
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
