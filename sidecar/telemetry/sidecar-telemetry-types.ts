// The sidecar's telemetry as types only: the server, the lazily loaded OpenTelemetry side and the
// session wrapper all name them, so they sit apart from both (no circle through a type import).
import type { Counter, Histogram, UpDownCounter } from '@opentelemetry/api';
import type { Logger, validateToolArguments } from '../../src/index.js';
import type { TurnContext } from '../categories/category.js';
import type { TurnSession } from '../turn/turn-session.js';
import type { TraceHeaders } from './trace-headers.js';

/** The sidecar's traces and metrics; absent when telemetry is off (then nothing is measured). */
export interface SidecarTelemetry {
  /**
   * Starts one turn's telemetry, when the turn opens. With `parent` (the W3C trace context of the
   * Turn stream's metadata) the Turn span is its child; without, the root of a trace of its own.
   */
  openTurn(turn: TurnContext, logger: Logger, parent?: TraceHeaders): TurnTelemetry;
  /** `http://HOST:PORT/metrics` when `--metrics-listen` serves Prometheus. */
  readonly metricsUrl?: string;
  /** Flushes spans and metrics and stops the exporters (bounded: 5 s). Never rejects. */
  shutdown(): Promise<void>;
}

/** One turn's hooks: the session's logger, its argument validation, and the session wrapper. */
export interface TurnTelemetry {
  /** Adds `trace_id` and `span_id` to every line (a call's when the line has its `callId`). */
  readonly logger: Logger;
  /** `validateToolArguments`, recorded as the call's `validate_arguments` span. */
  readonly validateArguments: typeof validateToolArguments;
  /** The session, its calls and events observed: spans per call and phase, metrics. */
  wrap(session: TurnSession): TurnSession;
}

/** The sidecar's metric instruments. */
export interface SidecarInstruments {
  calls: Counter;
  callDuration: Histogram;
  schedulingWait: Histogram;
  presentationEvents: Counter;
  openTurns: UpDownCounter;
}
