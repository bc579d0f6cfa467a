import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runTurn } from '../../../controller/loop/run-turn.js';
import type { ResponsesModel } from '../../../controller/model/responses-model.js';
import { functionCallItem, messageItem } from '../../../controller/model/responses-wire.js';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import { startControllerTelemetry, type ControllerTelemetry } from '../../../controller/telemetry/controller-telemetry.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../fixtures/otlp-receiver.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

/** A model in process: each first request calls `noop`, each continuation answers. Records nothing else. */
function noopCallingModel(prefix: string): ResponsesModel {
  let responses = 0;
  return {
    description: 'noop-caller',
    async create(request) {
      responses++;
      if (request.input.at(-1)?.type === 'function_call_output') return { id: `resp-${responses}`, output: [messageItem('done')], usage: { input_tokens: 3, output_tokens: 1 } };
      return { id: `resp-${responses}`, output: [functionCallItem({ callId: `${prefix}-call-${responses}`, name: 'noop', arguments: '{}' })], usage: { input_tokens: 2, output_tokens: 1 } };
    },
  };
}

const otelEnv = (endpoint: string, service: string) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '100',
  OTEL_METRICS_EXPORTER: 'none',
  OTEL_SERVICE_NAME: service,
});

describe("the controller's turn trace begins as the Turn stream opens", () => {
  let receiver: OtlpReceiver | undefined;
  let sidecar: StartedSidecar | undefined;
  let client: SidecarClient | undefined;
  let telemetry: ControllerTelemetry | undefined;
  let workspace: string | undefined;
  const saved = { ...process.env };
  afterEach(async () => {
    for (const key of Object.keys(process.env)) {
      if (!key.startsWith('OTEL_')) continue;
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
    client?.close();
    await telemetry?.shutdown();
    await sidecar?.stop('SIGKILL');
    await receiver?.close();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
    receiver = sidecar = client = telemetry = workspace = undefined;
  });

  it('parents the sidecar Turn span to invoke_agent; a second loop on the turn stays in its trace; a turn no loop runs, or one that fails to open, still ends its span', async () => {
    receiver = await startOtlpReceiver();
    const otlp = receiver;
    workspace = mkdtempSync(join(tmpdir(), 'controller-trace-'));
    sidecar = await startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--workspace', workspace, '--state-dir', join(workspace, '.state')], env: otelEnv(otlp.endpoint, 'sidecar-t') });
    // The SDK's exporters read process.env themselves: this worker's environment is the controller's.
    const env = otelEnv(otlp.endpoint, 'controller-t');
    Object.assign(process.env, env);
    const started = await startControllerTelemetry({ env });
    if (!started) throw new Error('OTEL_EXPORTER_OTLP_ENDPOINT started no controller telemetry');
    telemetry = started;
    client = createSidecarClient({ address: sidecar.address });

    // Two loops on one turn, as a workflow task's repair runs them.
    const turn = await client.openTurn({ agentId: 'agent-t', turnId: 'twice' }, { signal: AbortSignal.timeout(30_000) });
    for (const prompt of ['first', 'second']) {
      const outcome = await runTurn({ model: noopCallingModel(prompt), turn, prompt, turnId: 'twice', signal: AbortSignal.timeout(30_000) });
      expect(outcome.status).toBe('completed');
    }
    await turn.close({ timeoutMs: 10_000 });
    // A turn opened and closed with no loop.
    const idle = await client.openTurn({ agentId: 'agent-t', turnId: 'idle' }, { signal: AbortSignal.timeout(30_000) });
    await idle.close({ timeoutMs: 10_000 });
    // A turn that cannot open (nothing listens there).
    const nowhere = createSidecarClient({ address: '127.0.0.1:1' });
    await expect(nowhere.openTurn({ agentId: 'agent-t', turnId: 'unopened' }, { openTimeoutMs: 10_000 })).rejects.toMatchObject({ code: 'sidecar_unavailable' });
    nowhere.close();
    await started.shutdown();

    const spans = (service: string) => otlp.spans.filter((span) => span.service === service);
    const agents = (turnId: string) => spans('controller-t').filter((span) => span.name.startsWith('invoke_agent') && span.attributes['toolruntime.turn.id'] === turnId);
    const sidecarTurn = (turnId: string) => spans('sidecar-t').find((span) => span.name.endsWith('/Turn') && span.attributes['toolruntime.turn.id'] === turnId);
    const deadline = Date.now() + 30_000;
    while (!(agents('twice').length === 2 && agents('idle').length === 1 && agents('unopened').length === 1 && sidecarTurn('twice') && sidecarTurn('idle') && spans('sidecar-t').filter((span) => span.name === 'call noop').length === 2)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for spans: ${otlp.spans.map((span) => `${span.service} ${span.name}`).join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const [first, second] = agents('twice').sort((a, b) => (a.parentSpanId === '' ? -1 : b.parentSpanId === '' ? 1 : 0)) as [ReceivedSpan, ReceivedSpan];
    expect(first).toMatchObject({ parentSpanId: '', attributes: expect.objectContaining({ 'toolruntime.agent.id': 'agent-t', 'gen_ai.request.model': 'noop-caller', 'toolruntime.turn.status': 'completed' }) });
    expect(second).toMatchObject({ traceId: first.traceId, parentSpanId: first.spanId, attributes: expect.objectContaining({ 'toolruntime.agent.id': 'agent-t', 'toolruntime.turn.status': 'completed' }) });
    expect(sidecarTurn('twice')).toMatchObject({ traceId: first.traceId, parentSpanId: first.spanId });
    // Each loop's dispatch span is under its own invoke_agent span, and the sidecar's call span under it.
    for (const agent of [first, second]) {
      const dispatch = spans('controller-t').find((span) => span.name === 'execute_tool noop' && span.parentSpanId === agent.spanId);
      expect(dispatch, agent.spanId).toBeDefined();
      expect(spans('sidecar-t').find((span) => span.name === 'call noop' && span.parentSpanId === dispatch!.spanId)).toMatchObject({ traceId: first.traceId });
    }

    const [idleAgent] = agents('idle');
    expect(idleAgent).toMatchObject({ parentSpanId: '', status: 0 });
    expect(sidecarTurn('idle')).toMatchObject({ traceId: idleAgent!.traceId, parentSpanId: idleAgent!.spanId });
    expect(agents('unopened')[0]).toMatchObject({ status: 2, attributes: expect.objectContaining({ 'error.type': 'sidecar_unavailable' }) });
  }, 120_000);
});
