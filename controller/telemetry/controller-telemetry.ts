// Always loaded, and tiny: the controller's telemetry as the loop sees it. The OpenTelemetry SDK is
// imported only by `startControllerTelemetry`, and only when telemetry is configured.
import { readTelemetryConfig } from '../../src/telemetry/telemetry-config.js';
import type { ControllerTelemetry } from './controller-telemetry-types.js';

export type { ControllerTelemetry, ControllerTurnTelemetry } from './controller-telemetry-types.js';
export type { TurnTrace } from './turn-trace.js';

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
