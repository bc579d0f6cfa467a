import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../../fixtures/control-plane-client.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../fixtures/otlp-receiver.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { createClient, openTurn } from '../sidecar/turn-driver.js';

/** One sample of the Prometheus text format: its metric name, labels and value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses the Prometheus text exposition format strictly: every line is a well-formed `# HELP` /
 * `# TYPE` line, another `#` comment, or `name{label="value",...} number`; anything else throws.
 */
function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || /^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*$/.test(line)) continue;
    if (line.startsWith('#') && !/^# (HELP|TYPE)/.test(line)) continue; // a plain comment
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|[+-]Inf|NaN)(?: \d+)?$/.exec(line);
    if (!match) throw new Error(`not Prometheus text format: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

const valueOf = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value)).reduce((sum, sample) => sum + sample.value, 0);

async function scrape(url: string): Promise<Sample[]> {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  return parsePrometheusText(await response.text());
}

describe('sidecar metrics and traces', () => {
  let sidecar: StartedSidecar | undefined;
  let receiver: OtlpReceiver | undefined;
  afterEach(async () => {
    await sidecar?.stop('SIGKILL');
    sidecar = undefined;
    await receiver?.close();
    receiver = undefined;
  });

  it('serves Prometheus text at --metrics-listen whose counters move with the calls, and traces a client that sends no traceparent', async () => {
    receiver = await startOtlpReceiver();
    const otlp = receiver;
    const workspace = mkdtempSync(join(tmpdir(), 'telemetry-ws-'));
    sidecar = await startSidecar({
      entry: 'test/fixtures/fixture-sidecar.ts',
      args: ['--workspace', workspace, '--state-dir', join(workspace, '.state'), '--metrics-listen', '127.0.0.1:0', '--abort-grace-ms', '100'],
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_METRIC_EXPORT_INTERVAL: '60000', OTEL_SERVICE_NAME: 'sidecar-under-test' },
    });
    const started = sidecar;
    // The log line goes to stderr before the listening line reaches stdout, but the two pipes are read
    // apart: under load the listening line can be seen first. Wait for it, bounded.
    const line = await until(
      async () => started.stderr().split('\n').find((text) => text.includes('"metrics listening"')),
      (found) => found !== undefined,
      'the sidecar\'s "metrics listening" log line',
      10_000,
    );
    const url = (JSON.parse(line!) as { url: string }).url;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);

    const before = await scrape(url);
    const client = createClient(started.address);
    const turn = await openTurn(client, 'agent-metrics');
    try {
      for (const id of ['n1', 'n2', 'n3']) expect((await turn.call(id, 'noop', {})).error).toBeUndefined();
      expect((await turn.call('t1', 'throw', { message: 'boom' })).error?.code).toBe('tool_failed');
      expect((await turn.call('e1', 'emit', { count: 3 })).error).toBeUndefined();
      expect((await turn.call('r1', 'echo', '```json\n{"a": 1}\n```')).repairs.length).toBeGreaterThan(0);
      expect((await turn.call('x1', 'no_such_tool', {})).error?.code).toBe('unknown_tool');
      // Runs past its deadline and ignores the abort: the sidecar logs a warning for this call.
      expect((await turn.call('slow', 'ignore_abort', { ms: 1_500 }, { deadlineMs: 200 })).error?.code).toBe('timeout');
      // A duplicate of a running call: refused, and the running call's trace and count stay its own.
      void turn.call('d1', 'sleep', { ms: 300 });
      turn.stream.write({ request: { $case: 'call', value: { callId: 'd1', name: 'noop', namespace: '', argumentsJson: '{}', deadlineMs: 0, traceparent: '', tracestate: '' } } });
      const resultsOf = (callId: string) => turn.responses.filter((response) => response.callId === callId && response.event?.$case === 'result');
      const waitUntil = Date.now() + 20_000;
      while (resultsOf('d1').length < 2 && Date.now() < waitUntil) await new Promise((resolve) => setTimeout(resolve, 50));
      const codes = resultsOf('d1').map((response) => (response.event?.$case === 'result' ? (response.event.value.error?.code ?? 'ok') : ''));
      expect(codes).toEqual(['duplicate_call_id', 'ok']);

      const during = await scrape(url);
      const moved = (name: string, labels: Record<string, string>) => valueOf(during, name, labels) - valueOf(before, name, labels);
      expect(moved('toolruntime_calls_total', { tool: 'noop', code: 'ok' })).toBe(3);
      expect(moved('toolruntime_calls_total', { tool: 'throw', code: 'tool_failed' })).toBe(1);
      expect(moved('toolruntime_calls_total', { tool: '-', code: 'unknown_tool' })).toBe(1);
      expect(moved('toolruntime_calls_total', { tool: 'ignore_abort', code: 'timeout' })).toBe(1);
      expect(moved('toolruntime_calls_total', { tool: '-', code: 'duplicate_call_id' })).toBe(1);
      expect(moved('toolruntime_calls_total', { tool: 'sleep', code: 'ok' })).toBe(1);
      expect(moved('toolruntime_presentation_events_total', { tool: 'emit' })).toBe(4);
      expect(moved('toolruntime_call_duration_count', { tool: 'noop' })).toBe(3);
      expect(moved('toolruntime_call_scheduling_wait_count', { tool: 'noop' })).toBe(3);
      expect(valueOf(during, 'toolruntime_turns_open', { kind: 'text' })).toBe(1);
      expect(during.find((sample) => sample.name === 'target_info')?.labels.service_name).toBe('sidecar-under-test');
    } finally {
      await turn.end();
      client.close();
    }

    // A client that sends no traceparent: each call is the root of its own trace, linked to the turn.
    const spans = () => otlp.spans.filter((span) => span.service === 'sidecar-under-test');
    const deadline = Date.now() + 20_000;
    while (!(spans().some((span) => span.name === 'call ignore_abort') && spans().some((span) => span.name === 'call sleep') && spans().some((span) => span.name.endsWith('/Turn'))) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    const turnSpan = spans().find((span) => span.name.endsWith('/Turn'))!;
    expect(turnSpan.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.method': 'Turn', 'toolruntime.agent.id': 'agent-metrics' });
    // No trace context in the Turn stream's metadata either: the Turn span is a root.
    expect(turnSpan.parentSpanId).toBe('');
    const calls = spans().filter((span) => span.name.startsWith('call '));
    expect(calls.length).toBe(9);
    for (const call of calls) {
      expect(call.parentSpanId).toBe('');
      expect(call.links).toContainEqual({ traceId: turnSpan.traceId, spanId: turnSpan.spanId });
    }
    expect(new Set(calls.map((call) => call.traceId)).size).toBe(9);
    const slept = calls.find((call) => call.attributes['gen_ai.tool.call.id'] === 'd1')!;
    expect(slept).toMatchObject({ name: 'call sleep', status: 0 });
    expect(spans().filter((span) => span.parentSpanId === slept.spanId).map((span) => span.name).sort()).toEqual(['execute sleep', 'scheduling_wait', 'validate_arguments']);
    const echo = calls.find((call) => call.attributes['gen_ai.tool.call.id'] === 'r1')!;
    const validation = spans().find((span) => span.parentSpanId === echo.spanId && span.name === 'validate_arguments')!;
    expect((validation.attributes['toolruntime.arguments.repairs'] as string[]).length).toBeGreaterThan(0);
    const thrown = calls.find((call) => call.attributes['gen_ai.tool.call.id'] === 't1')!;
    expect(thrown).toMatchObject({ status: 2, attributes: expect.objectContaining({ 'error.type': 'tool_failed' }) });

    // The call's log line carries its trace and span ids.
    const slow = calls.find((call) => call.attributes['gen_ai.tool.call.id'] === 'slow')!;
    const warning = started
      .stderr()
      .split('\n')
      .filter((text) => text.includes('ignored its abort signal'))
      .map((text) => JSON.parse(text) as Record<string, unknown>)[0];
    expect(warning).toMatchObject({ callId: 'slow', trace_id: slow.traceId, span_id: slow.spanId });
  }, 90_000);
});
