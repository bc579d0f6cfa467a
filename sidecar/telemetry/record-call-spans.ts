// Loaded lazily, only when telemetry is configured: one call's spans and metrics, built from the
// times the session observed, after its result has gone to the writer.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Link, type Span, type SpanOptions, type Tracer } from '@opentelemetry/api';
import type { OtelRuntime } from '../../src/telemetry/start-otel.js';
import type { CallResult } from '../turn/turn-event.js';
import { REQUEST_LIMITS } from '../turn/bound-request.js';
import type { SidecarInstruments } from './sidecar-telemetry-types.js';

/** The gRPC attributes of every sidecar span about the Turn stream. */
export const RPC = { 'rpc.system': 'grpc', 'rpc.service': 'toolruntime.v1.ToolSidecarService', 'rpc.method': 'Turn' } as const;
/** The tool label of a call that never reached validation: the name is the model's, unbounded. */
export const UNVALIDATED = '-';

/**
 * One call as the session went through it: plain times (ms since the epoch) and facts, recorded on
 * the call's path at the cost of a clock read each; the spans are made from them afterwards.
 */
export interface CallTrace {
  callId: string;
  /** The name the client asked for (the span's name until validation finds the tool). */
  requestedName: string;
  /** The validated tool's key, or `-`. */
  tool: string;
  traceparent: string;
  tracestate: string;
  receivedAt: number;
  validation: { startedAt: number; endedAt: number; repairs: string[]; valid: boolean; error?: { code: string; message: string } } | undefined;
  executionMode: string;
  /** When the phases began (0: never): scheduling after a valid validation, then approval, execute. */
  schedulingAt: number;
  approvalAt: number;
  executeAt: number;
  endedAt: number;
  result: Pick<CallResult, 'error' | 'durationMs' | 'repairs' | 'terminateTurn'> | undefined;
  /** Made early only when a log line of the call needed its ids; else at the end. */
  span: Span | undefined;
}

/** What the spans of a turn's calls share. */
export interface CallSpanScope {
  runtime: OtelRuntime;
  instruments: SidecarInstruments;
  agentId: string;
  turnId: string;
  /** The Turn span's context when the turn joined a client's trace: the parent of calls with none. */
  turnContext: Context | undefined;
  /** A link to the Turn span, shared by every call span (empty when spans are not exported). */
  turnLinks: Link[];
}

/** A new call record, at its arrival. */
export function newCallTrace(callId: string, requestedName: string, traceparent: string, tracestate: string, receivedAt: number): CallTrace {
  return { callId, requestedName, tool: UNVALIDATED, traceparent, tracestate, receivedAt, validation: undefined, executionMode: '', schedulingAt: 0, approvalAt: 0, executeAt: 0, endedAt: 0, result: undefined, span: undefined };
}

/** The W3C headers as a parent context; `undefined` when absent, oversized or malformed. */
function parentOf(scope: CallSpanScope, call: CallTrace): Context | undefined {
  const { traceparent, tracestate } = call;
  if (!traceparent || traceparent.length > REQUEST_LIMITS.traceHeaderBytes) return scope.turnContext;
  return scope.runtime.extract(traceparent, tracestate.length > REQUEST_LIMITS.traceHeaderBytes ? '' : tracestate) ?? scope.turnContext;
}

/**
 * The call's SERVER span `call TOOL`, started at its arrival: under the client's dispatch span when
 * the call carried a `traceparent`, else under the Turn span of a joined turn, else the root of a
 * trace of its own; linked to the Turn span in every case. With its `result`, the span gets the
 * result's attributes at once (no later setAttribute).
 */
export function openCallSpan(scope: CallSpanScope, call: CallTrace, result?: CallTrace['result']): Span {
  const parent = parentOf(scope, call);
  const validated = call.tool !== UNVALIDATED;
  // One literal (no spreads): the SDK copies it twice more, and spreading built slow objects.
  const attributes: Attributes = {
    'rpc.system': RPC['rpc.system'],
    'rpc.service': RPC['rpc.service'],
    'rpc.method': RPC['rpc.method'],
    'gen_ai.tool.call.id': call.callId,
    'toolruntime.agent.id': scope.agentId,
    'toolruntime.turn.id': scope.turnId,
  };
  if (validated) attributes['gen_ai.tool.name'] = call.tool;
  if (result) setResultAttributes(attributes, result);
  const options: SpanOptions = { kind: SpanKind.SERVER, startTime: call.receivedAt, links: scope.turnLinks, attributes };
  if (!parent) options.root = true;
  return scope.runtime.tracer.startSpan(validated ? `call ${call.tool}` : `call ${call.requestedName}`, options, parent);
}

function setResultAttributes(attributes: Attributes, result: NonNullable<CallTrace['result']>): void {
  attributes['toolruntime.call.duration_ms'] = result.durationMs;
  attributes['toolruntime.arguments.repairs'] = result.repairs;
  attributes['toolruntime.terminate_turn'] = result.terminateTurn;
  if (result.error) attributes['error.type'] = result.error.code;
}

/** One ended phase span under the call's span; `error` sets its error status. */
function recordPhase(tracer: Tracer, context: Context, name: string, start: number, end: number, attributes: Attributes | undefined, error: { message: string } | undefined): void {
  const child = tracer.startSpan(name, attributes ? { startTime: start, attributes } : { startTime: start }, context);
  if (error) child.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  child.end(end);
}

/**
 * Records a finished call: its metrics, and (when tracing) its `call TOOL` span with children
 * `validate_arguments`, `scheduling_wait`, `approval_wait` (only when the client was asked) and
 * `execute TOOL`, each with the times the session observed. The phase open at the result carries
 * the error status of a failed call.
 */
export function recordCallSpans(scope: CallSpanScope, call: CallTrace): void {
  const { instruments } = scope;
  const result = call.result!;
  const code = result.error?.code ?? 'ok';
  const tool = { tool: call.tool };
  const outcome = { tool: call.tool, code };
  instruments.calls.add(1, outcome);
  instruments.callDuration.record((call.endedAt - call.receivedAt) / 1000, outcome);
  const waitEnd = call.approvalAt || call.executeAt || call.endedAt;
  if (call.schedulingAt) instruments.schedulingWait.record((waitEnd - call.schedulingAt) / 1000, tool);
  if (!scope.runtime.tracing) return;

  const { tracer } = scope.runtime;
  let span = call.span;
  if (span) {
    // Made early for a log line: named before validation found the tool.
    if (call.tool !== UNVALIDATED) span.updateName(`call ${call.tool}`).setAttribute('gen_ai.tool.name', call.tool);
    const attributes: Attributes = {};
    setResultAttributes(attributes, result);
    span.setAttributes(attributes);
  } else {
    span = openCallSpan(scope, call, result);
  }
  const context = trace.setSpan(ROOT_CONTEXT, span);
  const { validation } = call;
  if (validation) {
    const attributes: Attributes = { 'toolruntime.arguments.repairs': validation.repairs, 'toolruntime.arguments.repair_count': validation.repairs.length, 'toolruntime.arguments.valid': validation.valid };
    if (validation.error) attributes['error.type'] = validation.error.code;
    recordPhase(tracer, context, 'validate_arguments', validation.startedAt, validation.endedAt, attributes, validation.error);
  }
  // The phase still open when the result came carries the call's error.
  const { error } = result;
  if (call.schedulingAt) recordPhase(tracer, context, 'scheduling_wait', call.schedulingAt, waitEnd, { 'toolruntime.execution_mode': call.executionMode }, call.approvalAt || call.executeAt ? undefined : error);
  if (call.approvalAt) recordPhase(tracer, context, 'approval_wait', call.approvalAt, call.executeAt || call.endedAt, undefined, call.executeAt ? undefined : error);
  if (call.executeAt) recordPhase(tracer, context, `execute ${call.tool}`, call.executeAt, call.endedAt, undefined, error);
  if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  span.end(call.endedAt);
}
