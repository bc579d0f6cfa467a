// Always loaded, and tiny (no OpenTelemetry module): the W3C trace context a client sent as the Turn
// stream's gRPC metadata, read only when telemetry is on.
import type { Metadata } from '@grpc/grpc-js';
import { REQUEST_LIMITS } from '../turn/bound-request.js';

/** W3C `traceparent` and `tracestate` header values, as a client sent them. */
export interface TraceHeaders {
  traceparent: string;
  tracestate: string;
}

/** The string values of one metadata key (binary values are not trace context). */
function textValues(metadata: Metadata, key: string): string[] {
  return metadata.get(key).filter((value): value is string => typeof value === 'string');
}

/**
 * The `traceparent` / `tracestate` of a Turn stream's metadata, or `undefined` when the client sent
 * no single `traceparent`. As the W3C Trace Context says for a header it cannot use, a value over
 * the bound (`REQUEST_LIMITS.traceHeaderBytes`) or a repeated `traceparent` is ignored, not refused:
 * the turn then starts a trace of its own. Several `tracestate` values are one list, joined by `,`.
 */
export function readTraceHeaders(metadata: Metadata): TraceHeaders | undefined {
  const parents = textValues(metadata, 'traceparent');
  const traceparent = parents.length === 1 ? parents[0]!.trim() : '';
  if (!traceparent || traceparent.length > REQUEST_LIMITS.traceHeaderBytes) return undefined;
  const tracestate = textValues(metadata, 'tracestate').join(',');
  return { traceparent, tracestate: tracestate.length > REQUEST_LIMITS.traceHeaderBytes ? '' : tracestate };
}
