// Always loaded, and tiny: the sidecar's telemetry as the server sees it. The OpenTelemetry SDK is
// imported only by `startSidecarTelemetry`, and only when telemetry is configured.
import type { Logger, validateToolArguments } from '../../src/index.js';
import { readTelemetryConfig } from '../../src/telemetry/telemetry-config.js';
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

/**
 * Starts the sidecar's telemetry from the `OTEL_*` variables of `env` and `--metrics-listen`;
 * resolves `undefined`, having loaded no OpenTelemetry module, when neither asks for any.
 *
 * @throws ToolRuntimeError `invalid_request` for a bad variable or address (see
 *   `readTelemetryConfig`); the bind error when the metrics address is taken.
 */
export async function startSidecarTelemetry(options: { env: NodeJS.ProcessEnv; metricsListen?: string }): Promise<SidecarTelemetry | undefined> {
  const config = readTelemetryConfig({ env: options.env, serviceName: 'tools-runtime-sidecar', ...(options.metricsListen !== undefined ? { metricsListen: options.metricsListen } : {}) });
  if (!config) return undefined;
  const { createOtelSidecarTelemetry } = await import('./otel-sidecar-telemetry.js');
  return createOtelSidecarTelemetry(config);
}
