// Loaded lazily, only when telemetry is configured: the sidecar's instruments over the SDK.
import { startOtel } from '../../src/telemetry/start-otel.js';
import type { TelemetryConfig } from '../../src/telemetry/telemetry-config.js';
import { SECONDS_BUCKETS } from '../../src/telemetry/seconds-buckets.js';
import type { SidecarInstruments, SidecarTelemetry } from './sidecar-telemetry-types.js';
import { traceTurnSession } from './trace-turn-session.js';

/**
 * The sidecar's telemetry over a started SDK: a `toolruntime.v1.ToolSidecarService/Turn` span per
 * turn, a span per call with its phases, and the metrics `toolruntime.calls`,
 * `toolruntime.call.duration`, `toolruntime.call.scheduling_wait`,
 * `toolruntime.presentation_events`, `toolruntime.turns.open`.
 *
 * @throws the bind error when the metrics address is taken.
 */
export async function createOtelSidecarTelemetry(config: TelemetryConfig): Promise<SidecarTelemetry> {
  const runtime = await startOtel(config);
  const { meter } = runtime;
  const instruments: SidecarInstruments = {
    calls: meter.createCounter('toolruntime.calls', { description: 'Calls the sidecar answered, by tool and result code (ok when it succeeded)', unit: '{call}' }),
    callDuration: meter.createHistogram('toolruntime.call.duration', {
      description: 'Time from receiving a call to sending its result (validation, scheduling wait, approval and execute)',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
    }),
    schedulingWait: meter.createHistogram('toolruntime.call.scheduling_wait', {
      description: 'Time a validated call waited for its turn under the parallel/sequential rule',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
    }),
    presentationEvents: meter.createCounter('toolruntime.presentation_events', { description: 'Presentation events the tools emitted, by tool', unit: '{event}' }),
    openTurns: meter.createUpDownCounter('toolruntime.turns.open', { description: 'Turn streams open on this sidecar', unit: '{turn}' }),
  };
  return {
    ...(runtime.metricsUrl ? { metricsUrl: runtime.metricsUrl } : {}),
    openTurn: (turn, logger, parent) => traceTurnSession({ runtime, instruments, turn, logger, ...(parent ? { parent } : {}) }),
    shutdown: () => runtime.shutdown(),
  };
}
