import { describe, expect, it } from 'vitest';
import { parseHostPort, readTelemetryConfig } from '../../../src/telemetry/telemetry-config.js';

const read = (env: NodeJS.ProcessEnv, metricsListen?: string) => readTelemetryConfig({ env, serviceName: 'svc', ...(metricsListen !== undefined ? { metricsListen } : {}) });

describe('readTelemetryConfig', () => {
  it('is off with nothing configured, with only a service name, and when the SDK is disabled', () => {
    expect(read({})).toBeUndefined();
    expect(read({ OTEL_SERVICE_NAME: 'x', OTEL_RESOURCE_ATTRIBUTES: 'a=b' })).toBeUndefined();
    expect(read({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, ':9464')).toBeUndefined();
    expect(read({ OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' })).toBeUndefined();
  });

  it('turns traces and metrics on with an endpoint, http/protobuf by default, and reads the export interval', () => {
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual({
      serviceName: 'svc',
      traces: { protocol: 'http/protobuf' },
      otlpMetrics: { protocol: 'http/protobuf', intervalMs: 60_000, timeoutMs: 30_000 },
    });
    expect(read({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c/v1/traces', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })).toEqual({ serviceName: 'svc', traces: { protocol: 'http/json' } });
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_METRICS_EXPORTER: 'none', OTEL_METRIC_EXPORT_INTERVAL: '200' })?.otlpMetrics).toBeUndefined();
    expect(read({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: '200' })?.otlpMetrics).toEqual({ protocol: 'http/protobuf', intervalMs: 200, timeoutMs: 200 });
  });

  it('serves Prometheus at --metrics-listen, or at OTEL_EXPORTER_PROMETHEUS_HOST/PORT', () => {
    expect(read({}, '127.0.0.1:0')).toEqual({ serviceName: 'svc', prometheus: { host: '127.0.0.1', port: 0 } });
    expect(read({ OTEL_METRICS_EXPORTER: 'prometheus' })?.prometheus).toEqual({ host: 'localhost', port: 9464 });
    expect(read({ OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_HOST: '::1', OTEL_EXPORTER_PROMETHEUS_PORT: '9100' })?.prometheus).toEqual({ host: '::1', port: 9100 });
  });

  it('refuses what this build cannot do, naming the variable', () => {
    expect(() => read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow('OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this build sends OTLP over HTTP only');
    expect(() => read({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow('OTEL_TRACES_EXPORTER=zipkin');
    expect(() => read({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: 'soon' })).toThrow('OTEL_METRIC_EXPORT_INTERVAL');
    expect(() => read({}, 'localhost')).toThrow('--metrics-listen: expected HOST:PORT');
  });
});

describe('parseHostPort', () => {
  it('reads host:port, [v6]:port and :port', () => {
    expect(parseHostPort('0.0.0.0:9464', 'x')).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(parseHostPort('[::1]:0', 'x')).toEqual({ host: '::1', port: 0 });
    expect(parseHostPort(':9464', 'x')).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(() => parseHostPort('host:99999', 'x')).toThrow('x: expected HOST:PORT');
  });
});
