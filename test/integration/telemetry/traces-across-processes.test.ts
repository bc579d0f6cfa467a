import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../fixtures/otlp-receiver.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs the controller CLI (`npm start`'s entry) with `env`; it spawns its own sidecar child, which inherits `env`. */
async function runController(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const childEnv = { ...process.env, ...env };
  delete childEnv.OPENAI_API_KEY;
  delete childEnv.OPENAI_BASE_URL;
  delete childEnv.OTEL_SERVICE_NAME;
  const child = spawn(`${root}node_modules/.bin/tsx`, [`${root}controller/main.ts`, ...args], { cwd: root, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.resume();
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stderr };
}

/** Waits (bounded) until `check` holds over what the receiver got. */
async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('traces across the controller and the sidecar', () => {
  let receiver: OtlpReceiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  it('puts both processes spans of a turn in one trace: the sidecar Turn span under invoke_agent, its call spans under the controller dispatch spans', async () => {
    receiver = await startOtlpReceiver();
    const otlp = receiver;
    const { code, stderr } = await runController(['--approve', 'never', '--quiet'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_METRIC_EXPORT_INTERVAL: '250',
    });
    expect(code, stderr).toBe(0);
    // Both processes flush on exit; the receiver may still be reading the last posts.
    const byService = (service: string) => otlp.spans.filter((span) => span.service === service);
    await until(() => byService('tools-runtime-controller').some((span) => span.name.startsWith('invoke_agent')) && byService('tools-runtime-sidecar').some((span) => span.name.endsWith('/Turn')), 'both services');
    expect(otlp.rejected).toBe(0);

    const controllerSpans = byService('tools-runtime-controller');
    const sidecarSpans = byService('tools-runtime-sidecar');
    const turn = controllerSpans.find((span) => span.name.startsWith('invoke_agent'))!;
    expect(turn.parentSpanId).toBe('');
    expect(turn.attributes['toolruntime.turn.status']).toBe('completed');

    // Model requests: gen_ai.* attributes with the usage the embedded model reports.
    const chats = controllerSpans.filter((span) => span.attributes['gen_ai.operation.name'] === 'chat');
    expect(chats.length).toBe(4);
    for (const chat of chats) {
      expect(chat).toMatchObject({ traceId: turn.traceId, parentSpanId: turn.spanId, name: 'chat embedded-scripted', kind: 3 });
      expect(chat.attributes['gen_ai.request.model']).toBe('embedded-scripted');
      expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    }

    // Every dispatched call: an execute_tool span in the turn's trace, and the sidecar's call span under it.
    const dispatches = controllerSpans.filter((span) => span.attributes['gen_ai.operation.name'] === 'execute_tool');
    expect(dispatches.map((span) => span.attributes['gen_ai.tool.name']).sort()).toEqual(['list_files', 'read_file', 'read_file', 'todo_write', 'todo_write']);
    const sidecarTurn = sidecarSpans.find((span) => span.name.endsWith('/Turn'))!;
    expect(sidecarTurn.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.service': 'toolruntime.v1.ToolSidecarService', 'rpc.method': 'Turn' });
    // The Turn stream's metadata carried the invoke_agent span's context: one trace, the Turn span under it.
    expect(sidecarTurn).toMatchObject({ traceId: turn.traceId, parentSpanId: turn.spanId });
    expect(new Set([...controllerSpans, ...sidecarSpans].map((span) => span.traceId))).toEqual(new Set([turn.traceId]));
    for (const dispatch of dispatches) {
      expect(dispatch).toMatchObject({ traceId: turn.traceId, parentSpanId: turn.spanId });
      const call = sidecarSpans.find((span) => span.parentSpanId === dispatch.spanId);
      expect(call, `the sidecar span of ${String(dispatch.attributes['gen_ai.tool.call.id'])}`).toBeDefined();
      expect(call!).toMatchObject({ traceId: turn.traceId, name: `call ${String(dispatch.attributes['gen_ai.tool.name'])}`, kind: 2 });
      expect(call!.attributes['gen_ai.tool.call.id']).toBe(dispatch.attributes['gen_ai.tool.call.id']);
      expect(call!.links).toContainEqual({ traceId: sidecarTurn.traceId, spanId: sidecarTurn.spanId });
      const phases = sidecarSpans.filter((span: ReceivedSpan) => span.parentSpanId === call!.spanId).map((span) => span.name);
      expect(phases.sort()).toEqual(['execute ' + String(dispatch.attributes['gen_ai.tool.name']), 'scheduling_wait', 'validate_arguments'].sort());
      const validation = sidecarSpans.find((span) => span.parentSpanId === call!.spanId && span.name === 'validate_arguments')!;
      expect(validation.attributes['toolruntime.arguments.valid']).toBe(true);
    }

    // Metrics from both processes reached the receiver too.
    await until(() => otlp.metrics.some((metric) => metric.name === 'toolruntime.model.tokens') && otlp.metrics.some((metric) => metric.name === 'toolruntime.calls'), 'metrics');
    const names = new Set(otlp.metrics.map((metric) => `${metric.service} ${metric.name}`));
    expect(names).toContain('tools-runtime-sidecar toolruntime.call.scheduling_wait');
    expect(names).toContain('tools-runtime-controller gen_ai.client.token.usage');
  }, 120_000);

  it('refuses an OTLP protocol this build does not send, with a clear reason', async () => {
    const { code, stderr } = await runController(['--approve', 'never', '--quiet'], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(code).toBe(1);
    expect(stderr).toContain('OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this build sends OTLP over HTTP only');
  }, 60_000);
});
