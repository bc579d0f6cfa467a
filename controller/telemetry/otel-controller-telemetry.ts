// Loaded lazily, only when telemetry is configured: the controller's spans and instruments.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import { errorMessage, isToolRuntimeError } from '../../src/index.js';
import { SECONDS_BUCKETS } from '../../src/telemetry/seconds-buckets.js';
import { startOtel } from '../../src/telemetry/start-otel.js';
import type { TelemetryConfig } from '../../src/telemetry/telemetry-config.js';
import type { ModelResponse, ResponsesModel } from '../model/responses-model.js';
import type { ToolTurn } from '../sidecar-client/sidecar-types.js';
import type { ControllerTelemetry } from './controller-telemetry-types.js';
import type { TurnTrace } from './turn-trace.js';

/** A turn's `invoke_agent` span started as its stream opened. */
interface BegunTurn {
  span: Span;
  agentId: string;
  context: Context;
  /** A loop (`startTurn`) took the span over and ends it. */
  taken: boolean;
  ended: boolean;
}

const RPC = { 'rpc.system': 'grpc', 'rpc.service': 'toolruntime.v1.ToolSidecarService', 'rpc.method': 'Turn' } as const;

/** The model's name and server, from the model (or its `description`: `NAME at URL`). */
function describeModel(model: ResponsesModel): { name: string; server: Record<string, string | number> } {
  const [name = model.description, url] = model.description.split(' at ');
  try {
    const parsed = new URL(url ?? '');
    const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
    return { name, server: { 'server.address': parsed.hostname, 'server.port': port } };
  } catch {
    return { name, server: {} };
  }
}

/**
 * The controller's telemetry over a started SDK: per turn an `invoke_agent` span; under it a
 * `chat MODEL` CLIENT span per model request (gen_ai.operation.name, gen_ai.request.model,
 * gen_ai.response.id, gen_ai.usage.input_tokens / output_tokens) and an `execute_tool NAME` CLIENT
 * span per call sent to the sidecar (gen_ai.tool.name, gen_ai.tool.call.id, rpc.*), whose context
 * the call carries to the sidecar. Metrics: `gen_ai.client.operation.duration`,
 * `gen_ai.client.token.usage`, `toolruntime.model.requests`, `toolruntime.model.tokens`,
 * `toolruntime.dispatched_calls`, `toolruntime.turns.open`.
 *
 * @throws the bind error when the metrics address is taken.
 */
export async function createOtelControllerTelemetry(config: TelemetryConfig): Promise<ControllerTelemetry> {
  const runtime = await startOtel(config);
  const { tracer, meter, tracing } = runtime;
  const operationDuration = meter.createHistogram('gen_ai.client.operation.duration', {
    description: 'Duration of model requests (retries and the body read included)',
    unit: 's',
    advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
  });
  const tokenUsage = meter.createHistogram('gen_ai.client.token.usage', {
    description: 'Tokens per model request, by gen_ai.token.type',
    unit: '{token}',
    advice: { explicitBucketBoundaries: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304] },
  });
  const modelRequests = meter.createCounter('toolruntime.model.requests', { description: 'Model requests, by model and outcome', unit: '{request}' });
  const modelTokens = meter.createCounter('toolruntime.model.tokens', { description: 'Tokens the model reported, by model and type (input, output)', unit: '{token}' });
  const dispatchedCalls = meter.createCounter('toolruntime.dispatched_calls', { description: 'Calls the controller sent to the sidecar, by tool and result code', unit: '{call}' });
  const openTurns = meter.createUpDownCounter('toolruntime.turns.open', { description: 'Turns this controller is running', unit: '{turn}' });

  const agentSpan = (turnId: string, parent?: Context) =>
    tracer.startSpan('invoke_agent tools-runtime', { attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'tools-runtime', 'toolruntime.turn.id': turnId } }, parent ?? ROOT_CONTEXT);
  /** The span of a turn `beginTurn` started, for `startTurn` to take over (or start the next in its trace). */
  const begun = new WeakMap<TurnTrace, BegunTurn>();

  return {
    ...(runtime.metricsUrl ? { metricsUrl: runtime.metricsUrl } : {}),
    shutdown: () => runtime.shutdown(),
    beginTurn({ agentId, turnId }) {
      if (!tracing) return undefined;
      const span = agentSpan(turnId);
      span.setAttribute('toolruntime.agent.id', agentId);
      const state: BegunTurn = { span, agentId, context: trace.setSpan(ROOT_CONTEXT, span), taken: false, ended: false };
      const turnTrace: TurnTrace = {
        headers: runtime.inject(span),
        streamEnded(failure) {
          // A loop that took the span over ends it; else the stream's end is the turn's end.
          if (state.taken || state.ended) return;
          state.ended = true;
          if (failure) {
            span.setAttribute('error.type', isToolRuntimeError(failure) ? failure.code : 'sidecar_unavailable');
            span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(failure) });
          }
          span.end();
        },
      };
      begun.set(turnTrace, state);
      return turnTrace;
    },
    startTurn({ turnId, model, turn }) {
      const described = describeModel(model);
      const modelAttributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': described.name };
      openTurns.add(1);
      const opened = turn.trace ? begun.get(turn.trace) : undefined;
      let turnSpan: Span | undefined;
      if (opened && !opened.taken && !opened.ended) {
        // The span the stream's opening started, whose context the sidecar's Turn span is under.
        opened.taken = true;
        turnSpan = opened.span;
      } else if (tracing) {
        // A later loop on the same turn (a task's repair): a child of the first, in the turn's trace.
        turnSpan = agentSpan(turnId, opened?.context);
        if (opened) turnSpan.setAttribute('toolruntime.agent.id', opened.agentId);
      }
      turnSpan?.setAttribute('gen_ai.request.model', described.name);
      const turnContext = turnSpan ? trace.setSpan(ROOT_CONTEXT, turnSpan) : ROOT_CONTEXT;
      let ended = false;

      const tracedModel: ResponsesModel = {
        description: model.description,
        async create(request, options) {
          const started = performance.now();
          const span = turnSpan
            ? tracer.startSpan(`chat ${described.name}`, { kind: SpanKind.CLIENT, attributes: { ...modelAttributes, 'gen_ai.system': 'openai', ...described.server } }, turnContext)
            : undefined;
          let response: ModelResponse;
          try {
            response = await model.create(request, options);
          } catch (error) {
            const type = isToolRuntimeError(error) ? error.code : 'error';
            operationDuration.record((performance.now() - started) / 1000, { ...modelAttributes, 'error.type': type });
            modelRequests.add(1, { model: described.name, outcome: type });
            span?.setAttribute('error.type', type);
            span?.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
            span?.end();
            throw error;
          }
          const outcome = response.status ?? 'completed';
          operationDuration.record((performance.now() - started) / 1000, modelAttributes);
          modelRequests.add(1, { model: described.name, outcome });
          const input = response.usage?.input_tokens;
          const output = response.usage?.output_tokens;
          for (const [type, count] of [['input', input], ['output', output]] as const) {
            if (typeof count !== 'number') continue;
            tokenUsage.record(count, { ...modelAttributes, 'gen_ai.token.type': type });
            modelTokens.add(count, { model: described.name, type });
          }
          if (span) {
            span.setAttributes({
              'gen_ai.response.id': response.id,
              'gen_ai.response.finish_reasons': [outcome],
              ...(typeof input === 'number' ? { 'gen_ai.usage.input_tokens': input } : {}),
              ...(typeof output === 'number' ? { 'gen_ai.usage.output_tokens': output } : {}),
            });
            if (response.status === 'failed' || response.status === 'cancelled') span.setStatus({ code: SpanStatusCode.ERROR, message: response.reason ?? response.status });
            span.end();
          }
          return response;
        },
      };

      const tracedTurn: ToolTurn = {
        get tools() {
          return turn.tools;
        },
        get instructions() {
          return turn.instructions;
        },
        get failure() {
          return turn.failure;
        },
        get maxCallsInFlight() {
          return turn.maxCallsInFlight;
        },
        call(request, options) {
          const tool = request.namespace ? `${request.namespace}.${request.name}` : request.name;
          // One literal: spreading RPC into it per call cost more than the span did on the sidecar.
          const span = turnSpan
            ? tracer.startSpan(
                `execute_tool ${tool}`,
                {
                  kind: SpanKind.CLIENT,
                  attributes: {
                    'rpc.system': RPC['rpc.system'],
                    'rpc.service': RPC['rpc.service'],
                    'rpc.method': RPC['rpc.method'],
                    'gen_ai.operation.name': 'execute_tool',
                    'gen_ai.tool.name': tool,
                    'gen_ai.tool.call.id': request.callId,
                    'gen_ai.tool.type': 'function',
                  },
                },
                turnContext,
              )
            : undefined;
          const handle = turn.call(span ? { ...request, ...runtime.inject(span) } : request, options);
          void handle.result.then((result) => {
            dispatchedCalls.add(1, { tool, code: result.error?.code ?? 'ok' });
            if (!span) return;
            span.setAttributes({ 'toolruntime.call.duration_ms': result.durationMs, 'toolruntime.arguments.repairs': result.repairs });
            if (result.error) {
              span.setAttribute('error.type', result.error.code);
              span.setStatus({ code: SpanStatusCode.ERROR, message: result.error.message });
            }
            span.end();
          });
          return handle;
        },
      };

      return {
        model: tracedModel,
        turn: tracedTurn,
        end(status, error) {
          if (ended) return;
          ended = true;
          openTurns.add(-1);
          if (!turnSpan) return;
          turnSpan.setAttribute('toolruntime.turn.status', status);
          if (status !== 'completed' && status !== 'terminated') {
            turnSpan.setAttribute('error.type', status);
            turnSpan.setStatus({ code: SpanStatusCode.ERROR, message: error ?? status });
          }
          turnSpan.end();
        },
      };
    },
  };
}
