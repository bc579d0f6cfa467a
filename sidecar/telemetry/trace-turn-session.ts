// Loaded lazily, only when telemetry is configured: observes a turn session from outside, so the
// session and execute-call have no telemetry code on their hot path.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Counter, type Histogram, type Span, type UpDownCounter } from '@opentelemetry/api';
import { toolKey, validateToolArguments, type Logger } from '../../src/index.js';
import type { OtelRuntime } from '../../src/telemetry/start-otel.js';
import type { TurnContext } from '../categories/category.js';
import type { TurnEvent } from '../turn/turn-event.js';
import type { TurnEventSource, TurnSession } from '../turn/turn-session.js';
import type { TurnTelemetry } from './sidecar-telemetry.js';
import type { TraceHeaders } from './trace-headers.js';

/** The sidecar's metric instruments. */
export interface SidecarInstruments {
  calls: Counter;
  callDuration: Histogram;
  schedulingWait: Histogram;
  presentationEvents: Counter;
  openTurns: UpDownCounter;
}

const RPC = { 'rpc.system': 'grpc', 'rpc.service': 'toolruntime.v1.ToolSidecarService', 'rpc.method': 'Turn' } as const;
/** The tool label of a call that never reached validation: the name is the model's, unbounded. */
const UNVALIDATED = '-';

/** One call's spans and times, from `call` to its result. */
interface CallTrace {
  tool: string;
  receivedAt: number;
  span: Span | undefined;
  /** The open phase span: `scheduling_wait`, `approval_wait` or `execute`. */
  phase: Span | undefined;
  phaseName: 'validating' | 'scheduling' | 'approval' | 'execute';
  waitStartedAt: number;
  context: Context | undefined;
  logFields: { trace_id: string; span_id: string } | undefined;
}

const now = () => performance.timeOrigin + performance.now();

/**
 * Traces one turn: a SERVER span `toolruntime.v1.ToolSidecarService/Turn` (rpc.* attributes) for the
 * stream, and per call a SERVER span `call TOOL` whose parent is the controller's dispatch span when
 * the call carried a `traceparent` (else it starts a trace of its own), linked to the turn's span,
 * with children `validate_arguments` (the repair steps taken), `scheduling_wait`, `approval_wait`
 * (only when the client was asked) and `execute TOOL`. Phases end where the session hands their
 * events to the gRPC writer. Metrics are recorded whether or not spans are exported.
 */
export function traceTurnSession(options: { runtime: OtelRuntime; instruments: SidecarInstruments; turn: TurnContext; logger: Logger; parent?: TraceHeaders }): TurnTelemetry {
  const { runtime, instruments, turn } = options;
  const { tracer, tracing } = runtime;
  const kind = { kind: turn.kind };
  instruments.openTurns.add(1, kind);
  // The client's context (the Turn stream's metadata) makes the Turn span its child; else a root.
  const turnParent = tracing && options.parent ? runtime.extract(options.parent.traceparent, options.parent.tracestate) : undefined;
  const turnSpan = tracing
    ? tracer.startSpan(
        `${RPC['rpc.service']}/Turn`,
        {
          kind: SpanKind.SERVER,
          ...(turnParent ? {} : { root: true }),
          attributes: { ...RPC, 'toolruntime.agent.id': turn.agentId, 'toolruntime.turn.id': turn.turnId, 'toolruntime.turn.kind': turn.kind },
        },
        turnParent,
      )
    : undefined;
  // A call that carries no context of its own goes under the Turn span when the turn joined a trace.
  const turnContext = turnSpan && turnParent ? trace.setSpan(ROOT_CONTEXT, turnSpan) : undefined;
  const turnFields = turnSpan ? { trace_id: turnSpan.spanContext().traceId, span_id: turnSpan.spanContext().spanId } : undefined;
  const calls = new Map<string, CallTrace>();
  const seen = new Set<string>();
  let current: CallTrace | undefined;
  let turnEnded = false;

  const endTurn = () => {
    if (turnEnded) return;
    turnEnded = true;
    instruments.openTurns.add(-1, kind);
    turnSpan?.end();
  };
  const startPhase = (call: CallTrace, name: string, at: number, attributes: Record<string, string> = {}) => {
    call.phase?.end(at);
    call.phase = call.span ? tracer.startSpan(name, { startTime: at, attributes }, call.context) : undefined;
  };
  const endWait = (call: CallTrace, at: number) => {
    if (call.phaseName === 'scheduling') instruments.schedulingWait.record((at - call.waitStartedAt) / 1000, { tool: call.tool });
  };

  const observe = (event: TurnEvent) => {
    const call = calls.get(event.callId);
    if (event.type === 'presentation') {
      instruments.presentationEvents.add(1, { tool: call?.tool ?? UNVALIDATED });
      return;
    }
    if (!call) {
      // A call refused before it was traced (a duplicate id): counted, not spanned.
      if (event.type === 'result') instruments.calls.add(1, { tool: UNVALIDATED, code: event.result.error?.code ?? 'ok' });
      return;
    }
    const at = now();
    if (event.type === 'client-request') {
      if (event.request.kind !== 'approval' || call.phaseName !== 'scheduling') return;
      endWait(call, at);
      call.phaseName = 'approval';
      startPhase(call, 'approval_wait', at);
    } else if (event.type === 'activity-started') {
      endWait(call, at);
      call.phaseName = 'execute';
      startPhase(call, `execute ${call.tool}`, at);
    } else if (event.type === 'result') {
      calls.delete(event.callId);
      if (call.phaseName !== 'execute') endWait(call, at);
      const { result } = event;
      const code = result.error?.code ?? 'ok';
      if (result.error && call.phase) call.phase.setStatus({ code: SpanStatusCode.ERROR, message: result.error.message });
      call.phase?.end(at);
      instruments.calls.add(1, { tool: call.tool, code });
      instruments.callDuration.record((at - call.receivedAt) / 1000, { tool: call.tool, code });
      if (call.span) {
        call.span.setAttributes({ 'toolruntime.call.duration_ms': result.durationMs, 'toolruntime.arguments.repairs': result.repairs, 'toolruntime.terminate_turn': result.terminateTurn });
        if (result.error) {
          call.span.setAttribute('error.type', result.error.code);
          call.span.setStatus({ code: SpanStatusCode.ERROR, message: result.error.message });
        }
        call.span.end(at);
      }
    }
  };

  const validateArguments: typeof validateToolArguments = (tool, argumentsJson, validateOptions) => {
    const call = current;
    if (!call) return validateToolArguments(tool, argumentsJson, validateOptions);
    const started = now();
    const validation = validateToolArguments(tool, argumentsJson, validateOptions);
    const ended = now();
    call.tool = toolKey(tool.name, tool.namespace);
    if (call.span) {
      call.span.updateName(`call ${call.tool}`);
      call.span.setAttribute('gen_ai.tool.name', call.tool);
      const span = tracer.startSpan('validate_arguments', { startTime: started, attributes: { 'toolruntime.arguments.repairs': validation.repairs.map(String), 'toolruntime.arguments.repair_count': validation.repairs.length, 'toolruntime.arguments.valid': validation.ok } }, call.context);
      if (!validation.ok) {
        span.setAttribute('error.type', validation.error.code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: validation.error.message });
      }
      span.end(ended);
    }
    if (validation.ok) {
      call.phaseName = 'scheduling';
      call.waitStartedAt = ended;
      startPhase(call, 'scheduling_wait', ended, { 'toolruntime.execution_mode': tool.executionMode });
    }
    return validation;
  };

  const withTrace = (fields: Record<string, unknown> | undefined): Record<string, unknown> | undefined => {
    const callId = fields?.callId;
    const ids = (typeof callId === 'string' ? calls.get(callId)?.logFields : undefined) ?? turnFields;
    return ids ? { ...fields, ...ids } : fields;
  };
  const base = options.logger;
  const logger: Logger = {
    debug: (message, fields) => base.debug(message, withTrace(fields)),
    info: (message, fields) => base.info(message, withTrace(fields)),
    warn: (message, fields) => base.warn(message, withTrace(fields)),
    error: (message, fields) => base.error(message, withTrace(fields)),
  };

  const startCall = (callId: string, name: string, traceparent: string, tracestate: string): CallTrace => {
    const receivedAt = now();
    const parent = (tracing ? runtime.extract(traceparent, tracestate) : undefined) ?? turnContext;
    const span = turnSpan
      ? tracer.startSpan(
          `call ${name}`,
          {
            kind: SpanKind.SERVER,
            startTime: receivedAt,
            // With no context of its own nor the turn's, the call is the root of a trace (linked to the turn).
            ...(parent ? {} : { root: true }),
            links: [{ context: turnSpan.spanContext() }],
            attributes: { ...RPC, 'gen_ai.tool.call.id': callId, 'toolruntime.agent.id': turn.agentId, 'toolruntime.turn.id': turn.turnId },
          },
          parent,
        )
      : undefined;
    const context = span ? trace.setSpan(ROOT_CONTEXT, span) : undefined;
    return {
      tool: UNVALIDATED,
      receivedAt,
      span,
      phase: undefined,
      phaseName: 'validating',
      waitStartedAt: receivedAt,
      context,
      logFields: span ? { trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId } : undefined,
    };
  };

  return {
    logger,
    validateArguments,
    wrap(session: TurnSession): TurnSession {
      const inner = session.events;
      const events: TurnEventSource = {
        take() {
          const event = inner.take();
          if (event !== undefined) observe(event);
          return event;
        },
        readable: (signal) => inner.readable(signal),
        get done() {
          const done = inner.done;
          if (done) endTurn();
          return done;
        },
        async *[Symbol.asyncIterator]() {
          for await (const event of inner) {
            observe(event);
            yield event;
          }
          endTurn();
        },
      };
      return {
        events,
        get activeCalls() {
          return session.activeCalls;
        },
        call(request) {
          if (!seen.has(request.callId)) {
            seen.add(request.callId);
            const call = startCall(request.callId, request.name, request.traceparent ?? '', request.tracestate ?? '');
            calls.set(request.callId, call);
            current = call;
          }
          try {
            session.call(request);
          } finally {
            current = undefined;
          }
        },
        cancel: (callId, reason) => session.cancel(callId, reason),
        reply: (requestId, reply, sizeBytes) => session.reply(requestId, reply, sizeBytes),
        endInput: () => session.endInput(),
        abort(reason) {
          session.abort(reason);
          endTurn();
        },
      };
    },
  };
}
