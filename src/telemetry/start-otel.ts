// Loaded lazily (through `await import`) and only when telemetry is configured: the one module of
// the shared library that imports the OpenTelemetry SDK.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ROOT_CONTEXT,
  defaultTextMapGetter,
  isSpanContextValid,
  trace,
  type Context,
  type Meter,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter as OTLPMetricExporterJson } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OTLPMetricExporterProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { OTLPTraceExporter as OTLPTraceExporterJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPTraceExporterProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader, type MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { errorMessage } from '../errors.js';
import type { TelemetryConfig } from './telemetry-config.js';

/** The SDK as the process's telemetry modules use it. */
export interface OtelRuntime {
  /** A tracer that records nothing when traces are not exported. */
  tracer: Tracer;
  meter: Meter;
  /** True when spans are exported (so there is a point in recording them). */
  tracing: boolean;
  /** `http://HOST:PORT/metrics` once the Prometheus endpoint listens. */
  metricsUrl?: string;
  /** The context a W3C `traceparent` (and `tracestate`) names; `undefined` when absent or malformed. */
  extract(traceparent: string, tracestate: string): Context | undefined;
  /** The W3C `traceparent` and `tracestate` of `span`. */
  inject(span: Span): { traceparent: string; tracestate: string };
  /** Flushes and stops the exporters and the metrics server, within `timeoutMs` (default 5 s). */
  shutdown(timeoutMs?: number): Promise<void>;
}

const propagator = new W3CTraceContextPropagator();

/**
 * Starts the SDK for `config`: a tracer provider with a batch span processor (`OTEL_BSP_*`) and an
 * OTLP/HTTP exporter (`OTEL_EXPORTER_OTLP_*`), a meter provider with a periodic OTLP reader and/or
 * a Prometheus reader served at `config.prometheus`. The resource is `service.name` from the config,
 * overridden by `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES`. No global provider is registered:
 * the runtime's modules use the returned tracer and meter.
 *
 * @throws the bind error when the metrics address cannot be listened on.
 */
export async function startOtel(config: TelemetryConfig): Promise<OtelRuntime> {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': config.serviceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: config.traces
      ? [new BatchSpanProcessor(config.traces.protocol === 'http/json' ? new OTLPTraceExporterJson() : new OTLPTraceExporterProto())]
      : [],
  });
  const readers: MetricReader[] = [];
  if (config.otlpMetrics) {
    const { protocol, intervalMs, timeoutMs } = config.otlpMetrics;
    readers.push(
      new PeriodicExportingMetricReader({
        exporter: protocol === 'http/json' ? new OTLPMetricExporterJson() : new OTLPMetricExporterProto(),
        exportIntervalMillis: intervalMs,
        exportTimeoutMillis: timeoutMs,
      }),
    );
  }
  let prometheus: PrometheusExporter | undefined;
  let server: Server | undefined;
  let metricsUrl: string | undefined;
  if (config.prometheus) {
    prometheus = new PrometheusExporter({ preventServerStart: true });
    readers.push(prometheus);
    const exporter = prometheus;
    server = createServer((request, response) => {
      if (request.method === 'GET' && (request.url === '/metrics' || request.url?.startsWith('/metrics?'))) {
        exporter.getMetricsRequestHandler(request, response);
        return;
      }
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at /metrics\n');
    });
    const listening = server;
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(config.prometheus!.port, config.prometheus!.host, () => {
        listening.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    metricsUrl = `http://${host}:${address.port}/metrics`;
  }
  const meterProvider = new MeterProvider({ resource, readers });

  return {
    tracer: tracerProvider.getTracer('tools-runtime'),
    meter: meterProvider.getMeter('tools-runtime'),
    tracing: config.traces !== undefined,
    ...(metricsUrl ? { metricsUrl } : {}),
    extract(traceparent, tracestate) {
      if (!traceparent) return undefined;
      const context = propagator.extract(ROOT_CONTEXT, { traceparent, tracestate }, defaultTextMapGetter);
      return trace.getSpanContext(context) ? context : undefined;
    },
    inject(span) {
      // The propagator's format, without the context and carrier it would build for every call.
      const { traceId, spanId, traceFlags, traceState } = span.spanContext();
      if (!isSpanContextValid(span.spanContext())) return { traceparent: '', tracestate: '' };
      return { traceparent: `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`, tracestate: traceState?.serialize() ?? '' };
    },
    async shutdown(timeoutMs = 5_000) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs).unref()));
      const stopped = Promise.allSettled([
        tracerProvider.shutdown(),
        meterProvider.shutdown(),
        new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())),
      ]).then((outcomes) => {
        for (const outcome of outcomes) {
          if (outcome.status === 'rejected') process.stderr.write(`telemetry: shutting down failed: ${errorMessage(outcome.reason)}\n`);
        }
      });
      server?.closeAllConnections();
      await Promise.race([stopped, bound]);
      clearTimeout(timer);
    },
  };
}
