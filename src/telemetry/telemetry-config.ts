// Always loaded: decides from the environment and flags whether telemetry is on, without importing
// any OpenTelemetry module. The SDK is imported (lazily) only when this returns a config.
import { ToolRuntimeError } from '../errors.js';

/** How an OTLP exporter encodes what it sends. */
export type OtlpProtocol = 'http/json' | 'http/protobuf';

/** What telemetry a process runs, read from `OTEL_*` variables and `--metrics-listen`. */
export interface TelemetryConfig {
  /** The default `service.name` (`OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` override it). */
  serviceName: string;
  /** Export spans over OTLP/HTTP (the exporter reads the endpoint and headers variables itself). */
  traces?: { protocol: OtlpProtocol };
  /** Push metrics over OTLP/HTTP every `intervalMs`. */
  otlpMetrics?: { protocol: OtlpProtocol; intervalMs: number; timeoutMs: number };
  /** Serve the Prometheus text format on `host:port` (port 0: any free port). */
  prometheus?: { host: string; port: number };
}

const endpointVariables = (signal: 'TRACES' | 'METRICS') => [`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`, 'OTEL_EXPORTER_OTLP_ENDPOINT'];

/**
 * Reads the telemetry configuration. Returns `undefined` when nothing asks for telemetry (no OTLP
 * endpoint, no `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` other than `none`, no
 * `--metrics-listen`) or when `OTEL_SDK_DISABLED=true`: then no OpenTelemetry module is loaded.
 *
 * Traces are exported when `OTEL_TRACES_EXPORTER=otlp` or an OTLP endpoint (generic or for traces)
 * is set; metrics are pushed when `OTEL_METRICS_EXPORTER=otlp` or an endpoint is set, and served for
 * Prometheus with `--metrics-listen ADDR` or `OTEL_METRICS_EXPORTER=prometheus` (then
 * `OTEL_EXPORTER_PROMETHEUS_HOST`/`_PORT`, default `localhost:9464`).
 *
 * @throws ToolRuntimeError `invalid_request` for an exporter or protocol this build does not have
 *   (`grpc`, `zipkin`, ...), a bad interval, or a `metricsListen` that is not `host:port`.
 */
export function readTelemetryConfig(options: { env: NodeJS.ProcessEnv; serviceName: string; metricsListen?: string }): TelemetryConfig | undefined {
  const { env } = options;
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return undefined;
  const config: TelemetryConfig = { serviceName: options.serviceName };
  const tracesExporters = exporterList(env, 'OTEL_TRACES_EXPORTER', ['otlp', 'none']);
  const metricsExporters = exporterList(env, 'OTEL_METRICS_EXPORTER', ['otlp', 'prometheus', 'none']);
  const hasEndpoint = (signal: 'TRACES' | 'METRICS') => endpointVariables(signal).some((name) => (env[name] ?? '').trim() !== '');

  if (tracesExporters ? tracesExporters.includes('otlp') : hasEndpoint('TRACES')) {
    config.traces = { protocol: protocolOf(env, 'TRACES') };
  }
  if (metricsExporters ? metricsExporters.includes('otlp') : hasEndpoint('METRICS')) {
    const intervalMs = positiveNumber(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000);
    config.otlpMetrics = {
      protocol: protocolOf(env, 'METRICS'),
      intervalMs,
      timeoutMs: Math.min(intervalMs, positiveNumber(env, 'OTEL_METRIC_EXPORT_TIMEOUT', 30_000)),
    };
  }
  if (options.metricsListen !== undefined) {
    config.prometheus = parseHostPort(options.metricsListen, '--metrics-listen');
  } else if (metricsExporters?.includes('prometheus')) {
    const host = env.OTEL_EXPORTER_PROMETHEUS_HOST?.trim() || 'localhost';
    const port = env.OTEL_EXPORTER_PROMETHEUS_PORT?.trim() || '9464';
    config.prometheus = parseHostPort(`${host.includes(':') ? `[${host}]` : host}:${port}`, 'OTEL_EXPORTER_PROMETHEUS_HOST/PORT');
  }
  return config.traces || config.otlpMetrics || config.prometheus ? config : undefined;
}

/**
 * Parses `host:port`, `[v6]:port` or `:port` (all interfaces) for the metrics server.
 *
 * @throws ToolRuntimeError `invalid_request` naming `what` when it is not one of those.
 */
export function parseHostPort(text: string, what: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]*)):(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[3]);
  if (!match || port > 65_535) {
    throw new ToolRuntimeError('invalid_request', `${what}: expected HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464, :9464, port 0 for any free one), got ${JSON.stringify(text)}`);
  }
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

function exporterList(env: NodeJS.ProcessEnv, name: string, known: string[]): string[] | undefined {
  const text = env[name]?.trim();
  if (!text) return undefined;
  const list = text.split(',').map((item) => item.trim().toLowerCase()).filter(Boolean);
  const unknown = list.filter((item) => !known.includes(item));
  if (unknown.length > 0) {
    throw new ToolRuntimeError('invalid_request', `${name}=${text}: this build exports ${known.filter((item) => item !== 'none').join(' and ')} (or none), not ${unknown.join(', ')}`);
  }
  return list;
}

function protocolOf(env: NodeJS.ProcessEnv, signal: 'TRACES' | 'METRICS'): OtlpProtocol {
  const name = env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`]?.trim() ? `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL` : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const value = env[name]?.trim() || 'http/protobuf';
  if (value !== 'http/json' && value !== 'http/protobuf') {
    throw new ToolRuntimeError('invalid_request', `${name}=${value}: this build sends OTLP over HTTP only: use http/protobuf (the default) or http/json`);
  }
  return value;
}

function positiveNumber(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name]?.trim();
  if (!text) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new ToolRuntimeError('invalid_request', `${name}: expected a positive number of milliseconds, got ${JSON.stringify(text)}`);
  return value;
}
