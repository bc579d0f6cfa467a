// The sidecar's bounds, apart from the composed configuration (sidecar-config.ts): the gRPC layer,
// the turn and the categories need them, and none of them may see the other categories' types.

/** Bounds on everything a turn can make the sidecar hold or wait for. */
export interface SidecarLimits {
  /** Largest gRPC message either way, in bytes. */
  maxMessageBytes: number;
  /** Largest `arguments_json` accepted, in bytes (larger fails with `arguments_too_large`). */
  maxArgumentsBytes: number;
  /** Longest text part of a result, in characters; longer text is cut head and tail, saying how much. */
  maxResultTextChars: number;
  /** A call's deadline when the client gives none, in milliseconds. */
  defaultCallDeadlineMs: number;
  /** The longest deadline a client may ask for, in milliseconds. */
  maxCallDeadlineMs: number;
  /** Calls of one turn that may be in flight (running or waiting) at once. */
  maxConcurrentCallsPerTurn: number;
  /** How long an aborted tool may take to settle before its `aborted` result is sent anyway. */
  abortGraceMs: number;
  /** On SIGTERM, how long running calls may go on before they are aborted. */
  drainGraceMs: number;
  /**
   * Presentation events one call may have waiting to be sent (the client reads slower than the
   * tool emits). A call past it is aborted with `tool_failed`; tools that await `emit` never get
   * near it.
   */
  maxQueuedEvents: number;
  /** Reverse requests (control, approval) one call may send to the client in all. */
  maxClientRequestsPerCall: number;
  /** Reverse requests of one turn that may wait for a reply at once. */
  maxPendingClientRequestsPerTurn: number;
  /** Largest control request sent, or client reply accepted, in bytes. */
  maxClientMessageBytes: number;
}

export const defaultSidecarLimits: SidecarLimits = {
  maxMessageBytes: 16 * 1024 * 1024,
  maxArgumentsBytes: 1024 * 1024,
  maxResultTextChars: 100_000,
  defaultCallDeadlineMs: 10 * 60_000,
  maxCallDeadlineMs: 60 * 60_000,
  maxConcurrentCallsPerTurn: 256,
  abortGraceMs: 2_000,
  drainGraceMs: 10_000,
  maxQueuedEvents: 10_000,
  maxClientRequestsPerCall: 32,
  maxPendingClientRequestsPerTurn: 64,
  maxClientMessageBytes: 1024 * 1024,
};
