// The controller's telemetry as types only: the loop, the lazily loaded OpenTelemetry side and
// `startControllerTelemetry` all name them, so they sit apart from each (no circle through a type import).
import type { ResponsesModel } from '../model/responses-model.js';
import type { ToolTurn } from '../sidecar-client/sidecar-types.js';
import type { TurnStatus } from '../loop/turn-events.js';
import type { TurnTrace } from './turn-trace.js';

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
