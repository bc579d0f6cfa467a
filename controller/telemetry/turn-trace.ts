// A leaf on purpose: the sidecar client's types name a turn's trace, and the telemetry's types name
// the sidecar client's, so the trace stands apart from both (no circle through a type import).

/**
 * A turn's trace, begun as its Turn stream opens (before the loop runs), so the sidecar's Turn span
 * can be a child of the controller's `invoke_agent` span. The first `startTurn` on the turn takes its
 * span over; when none does, the span ends with the stream.
 */
export interface TurnTrace {
  /** W3C trace context of the `invoke_agent` span: sent as the Turn stream's gRPC metadata. */
  readonly headers: { readonly traceparent: string; readonly tracestate: string };
  /** The stream ended (or never opened: `failure` says why); ends the span unless a loop took it. */
  streamEnded(failure?: Error): void;
}
