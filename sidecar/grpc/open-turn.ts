// What a Turn or AssembleTools needs once it opens: the catalogs' tools assembled, their schemas
// collected and the session that validates and runs calls. It holds zod, the argument ladder and
// the turn layer, so sidecar-service.ts loads it on the first turn rather than on the way to the
// listening line: an idle sidecar does not carry it.
import type { Logger } from '../../src/logger.js';
import { collectToolSchemas } from '../../src/schema/collect-tool-schemas.js';
import type { AssembleToolsResponse } from '../../src/gen/toolruntime/v1/sidecar.js';
import { assembleToolSet, type AssembledToolSet, type Catalogs, type TurnContext } from '../categories/category.js';
import type { CategoryConfig } from '../categories/category-config.js';
import type { SidecarTelemetry } from '../telemetry/sidecar-telemetry.js';
import type { TraceHeaders } from '../telemetry/trace-headers.js';
import { createClientRequests, type ControlChannel } from '../turn/client-requests.js';
import { createTurnSession } from '../turn/turn-session.js';
import { toToolDefinition } from './proto-mapping.js';
import type { OpenedTurn } from './turn-handler.js';

/** What both RPCs share: the catalogs and how the sidecar runs. */
export interface OpenTurnOptions {
  catalogs: Catalogs;
  config: CategoryConfig;
  logger: Logger;
  telemetry?: SidecarTelemetry;
}

// AssembleTools opens no turn, so nothing can answer: its tools are listed, never executed.
const inspectionChannel: ControlChannel = {
  request: () => Promise.reject(new Error('AssembleTools opens no turn: there is no client to ask')),
};

async function assemble(options: OpenTurnOptions, turn: TurnContext, signal: AbortSignal, control: ControlChannel | undefined): Promise<{ assembled: AssembledToolSet; response: AssembleToolsResponse }> {
  const { catalogs, config } = options;
  const assembled = await assembleToolSet(catalogs, { turn, config, signal, ...(turn.controlPlane && control ? { control } : {}) });
  const response = { tools: collectToolSchemas(assembled.tools).map(toToolDefinition), instructions: assembled.instructions, maxCallsInFlight: config.limits.maxConcurrentCallsPerTurn };
  return { assembled, response };
}

/** AssembleTools: the turn's tool set, listed and never run. */
export async function assembleTools(options: OpenTurnOptions, turn: TurnContext, signal: AbortSignal): Promise<AssembleToolsResponse> {
  return (await assemble(options, turn, signal, inspectionChannel)).response;
}

/** A Turn's open: its tool set and the session that runs its calls. */
export async function openTurn(options: OpenTurnOptions, turn: TurnContext, signal: AbortSignal, traceHeaders?: TraceHeaders): Promise<OpenedTurn> {
  const { config, logger, telemetry } = options;
  const clientRequests = createClientRequests({ limits: config.limits });
  const { assembled, response } = await assemble(options, turn, signal, clientRequests.channel);
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
  return { tools: response.tools, instructions: response.instructions, maxCallsInFlight: response.maxCallsInFlight, session: traced ? traced.wrap(session) : session };
}
