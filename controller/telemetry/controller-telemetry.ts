// Always loaded, and tiny: the controller's telemetry as the loop sees it. The OpenTelemetry SDK is
// imported only by `startControllerTelemetry`, and only when telemetry is configured.
import { readTelemetryConfig } from '../../src/telemetry/telemetry-config.js';
import type { ResponsesModel } from '../model/responses-model.js';
import type { ToolTurn } from '../sidecar-client/sidecar-types.js';
import type { TurnStatus } from '../loop/turn-events.js';

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

/** The controller's traces and metrics; absent when telemetry is off. */
export interface ControllerTelemetry {
  /**
   * Begins the trace of a turn about to be opened: starts its `invoke_agent` span. `undefined` when
   * spans are not exported.
   */
  beginTurn(context: { agentId: string; turnId: string }): TurnTrace | undefined;
  /**
   * Starts one turn's trace: the model and the tool turn, wrapped to record their requests and
   * calls. The turn's `trace` (begun when it opened) supplies the `invoke_agent` span; a later
   * `startTurn` on the same turn (a task turn's repair) starts another in the same trace.
   */
  startTurn(options: { turnId: string; model: ResponsesModel; turn: ToolTurn }): ControllerTurnTelemetry;
  /** `http://HOST:PORT/metrics` when `--metrics-listen` serves Prometheus. */
  readonly metricsUrl?: string;
  /** Flushes spans and metrics and stops the exporters (bounded: 5 s). Never rejects. */
  shutdown(): Promise<void>;
}

/** One turn as the loop uses it while it is traced. */
export interface ControllerTurnTelemetry {
  /** Each `create` is a `chat MODEL` span (gen_ai.* attributes) under the turn's span. */
  readonly model: ResponsesModel;
  /** Each `call` is an `execute_tool NAME` span whose context travels in CallTool.traceparent. */
  readonly turn: ToolTurn;
  /** Ends the turn's span with how the turn ended. */
  end(status: TurnStatus, error?: string): void;
}

let installed: ControllerTelemetry | undefined;

/** The process's controller telemetry, once `startControllerTelemetry` started it; else `undefined`. */
export function controllerTelemetry(): ControllerTelemetry | undefined {
  return installed;
}

/**
 * Starts the controller's telemetry from the `OTEL_*` variables of `env` and `--metrics-listen`, and
 * makes it the process's (`controllerTelemetry()`, which every `runTurn` reads). Resolves
 * `undefined`, having loaded no OpenTelemetry module, when neither asks for any. Its `shutdown`
 * uninstalls it.
 *
 * @throws ToolRuntimeError `invalid_request` for a bad variable or address; the bind error when
 *   the metrics address is taken.
 */
export async function startControllerTelemetry(options: { env: NodeJS.ProcessEnv; metricsListen?: string }): Promise<ControllerTelemetry | undefined> {
  const config = readTelemetryConfig({ env: options.env, serviceName: 'tools-runtime-controller', ...(options.metricsListen !== undefined ? { metricsListen: options.metricsListen } : {}) });
  if (!config) return undefined;
  const { createOtelControllerTelemetry } = await import('./otel-controller-telemetry.js');
  const telemetry = await createOtelControllerTelemetry(config);
  const active: ControllerTelemetry = {
    ...telemetry,
    beginTurn: (context) => telemetry.beginTurn(context),
    startTurn: (turnOptions) => telemetry.startTurn(turnOptions),
    async shutdown() {
      if (installed === active) installed = undefined;
      await telemetry.shutdown();
    },
  };
  installed = active;
  return active;
}
