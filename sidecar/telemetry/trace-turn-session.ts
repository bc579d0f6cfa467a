// Loaded lazily, only when telemetry is configured: observes a turn session from outside, so the
// session and execute-call have no telemetry code on their hot path.
import { ROOT_CONTEXT, SpanKind, trace, type Link } from '@opentelemetry/api';
import { errorMessage, validateToolArguments, type Logger } from '../../src/index.js';
import { toolKey } from '../../src/schema/collect-tool-schemas.js';
import type { OtelRuntime } from '../../src/telemetry/start-otel.js';
import type { TurnContext } from '../categories/category.js';
import type { TurnEvent } from '../turn/turn-event.js';
import type { TurnEventSource, TurnSession } from '../turn/turn-session.js';
import { newCallTrace, openCallSpan, recordCallSpans, RPC, UNVALIDATED, type CallSpanScope, type CallTrace } from './record-call-spans.js';
import type { SidecarInstruments, TurnTelemetry } from './sidecar-telemetry-types.js';
import type { TraceHeaders } from './trace-headers.js';

const now = () => performance.timeOrigin + performance.now();

/**
 * Traces one turn: a SERVER span `toolruntime.v1.ToolSidecarService/Turn` (rpc.* attributes) for the
 * stream, the child of the client's span when the stream's metadata carried a `traceparent` (else a
 * root); and per call a SERVER span `call TOOL` with children `validate_arguments` (the repair steps
 * taken), `scheduling_wait`, `approval_wait` (only when the client was asked) and `execute TOOL` (see
 * `recordCallSpans`). Phases end where the session hands their events to the gRPC writer.
 *
 * On a call's path only clock reads are taken: its spans and metrics are made from those times once
 * its result has been handed to the writer (on the next turn of the event loop, or when the turn
 * ends), so they cost the call's round trip nothing. A log line of a running call makes its span at
 * once, for the ids. Metrics are recorded whether or not spans are exported.
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
  const turnFields = turnSpan ? { trace_id: turnSpan.spanContext().traceId, span_id: turnSpan.spanContext().spanId } : undefined;
  const scope: CallSpanScope = {
    runtime,
    instruments,
    agentId: turn.agentId,
    turnId: turn.turnId,
    // A call that carries no context of its own goes under the Turn span when the turn joined a trace.
    turnContext: turnSpan && turnParent ? trace.setSpan(ROOT_CONTEXT, turnSpan) : undefined,
    turnLinks: turnSpan ? [{ context: turnSpan.spanContext() } satisfies Link] : [],
  };
  const calls = new Map<string, CallTrace>();
  let current: CallTrace | undefined;
  let turnEnded = false;

  // Calls whose result went to the writer, recorded together after it wrote them.
  let finished: CallTrace[] = [];
  let recordScheduled = false;
  const recordFinished = () => {
    recordScheduled = false;
    const batch = finished;
    finished = [];
    for (const call of batch) {
      try {
        recordCallSpans(scope, call);
      } catch (error) {
        // Out of any call's path now: a telemetry failure must not take the sidecar down.
        options.logger.warn('recording a call for telemetry failed', { callId: call.callId, error: errorMessage(error) });
      }
    }
  };

  const endTurn = () => {
    if (turnEnded) return;
    turnEnded = true;
    recordFinished();
    instruments.openTurns.add(-1, kind);
    turnSpan?.end();
  };

  const observe = (event: TurnEvent) => {
    const call = calls.get(event.callId);
    if (event.type === 'presentation') {
      instruments.presentationEvents.add(1, { tool: call?.tool ?? UNVALIDATED });
      return;
    }
    // A duplicate of a call still running shares its id: its refusal must not end that call's trace.
    // (A validated call's own result is never `duplicate_call_id`; a call refused on arrival has
    // its result queued before any duplicate's.)
    if (!call || (event.type === 'result' && event.result.error?.code === 'duplicate_call_id' && call.validation)) {
      if (event.type === 'result') instruments.calls.add(1, { tool: UNVALIDATED, code: event.result.error?.code ?? 'ok' });
      return;
    }
    if (event.type === 'client-request') {
      if (event.request.kind === 'approval' && call.schedulingAt && !call.approvalAt && !call.executeAt) call.approvalAt = now();
    } else if (event.type === 'activity-started') {
      call.executeAt = now();
    } else if (event.type === 'result') {
      call.endedAt = now();
      calls.delete(event.callId);
      const { error, durationMs, repairs, terminateTurn } = event.result;
      // The few fields the spans need: the content (which can be large) is not held.
      call.result = { durationMs, repairs, terminateTurn };
      if (error) call.result.error = error;
      finished.push(call);
      if (!recordScheduled) {
        recordScheduled = true;
        setImmediate(recordFinished);
      }
    }
  };

  const validateArguments: typeof validateToolArguments = (tool, argumentsJson, validateOptions) => {
    const call = current;
    if (!call) return validateToolArguments(tool, argumentsJson, validateOptions);
    const startedAt = now();
    const validation = validateToolArguments(tool, argumentsJson, validateOptions);
    const endedAt = now();
    call.tool = toolKey(tool.name, tool.namespace);
    call.validation = { startedAt, endedAt, repairs: validation.repairs, valid: validation.ok };
    if (!validation.ok) call.validation.error = validation.error;
    if (validation.ok) {
      call.schedulingAt = endedAt;
      call.executionMode = tool.executionMode;
    }
    return validation;
  };

  const withTrace = (fields: Record<string, unknown> | undefined): Record<string, unknown> | undefined => {
    const callId = fields?.callId;
    const call = typeof callId === 'string' && turnSpan ? calls.get(callId) : undefined;
    if (call && !call.span) call.span = openCallSpan(scope, call);
    const ids = call?.span ? { trace_id: call.span.spanContext().traceId, span_id: call.span.spanContext().spanId } : turnFields;
    return ids ? { ...fields, ...ids } : fields;
  };
  const base = options.logger;
  const logger: Logger = {
    debug: (message, fields) => base.debug(message, withTrace(fields)),
    info: (message, fields) => base.info(message, withTrace(fields)),
    warn: (message, fields) => base.warn(message, withTrace(fields)),
    error: (message, fields) => base.error(message, withTrace(fields)),
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
        whenReadable: (callback) => inner.whenReadable(callback),
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
          // Not a set of every id the turn saw (the session keeps one): a duplicate of a running
          // call is left to `observe`; one of a finished call is traced as the refusal it gets.
          if (!calls.has(request.callId)) {
            const call = newCallTrace(request.callId, request.name, request.traceparent ?? '', request.tracestate ?? '', now());
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
