// Always loaded, and tiny: the sidecar's telemetry as the server sees it. The OpenTelemetry SDK is
// imported only by `startSidecarTelemetry`, and only when telemetry is configured.
import { readTelemetryConfig } from '../../src/telemetry/telemetry-config.js';
import type { SidecarTelemetry } from './sidecar-telemetry-types.js';

export type { SidecarTelemetry, TurnTelemetry } from './sidecar-telemetry-types.js';

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
