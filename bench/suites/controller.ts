// The controller's loop overhead per tool call, against the embedded model and a real sidecar
// child, with the model server's own time measured separately (the same request bodies replayed
// over raw HTTP) and subtracted; and schema collection for 1,000 tools beside JSON.stringify.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { collectProviderTools } from '../../controller/loop/collect-provider-tools.js';
import { runTurn } from '../../controller/loop/run-turn.js';
import { startEmbeddedModel } from '../../controller/model/embedded-model.js';
import { createOpenAIResponsesModel } from '../../controller/model/openai-responses-model.js';
import type { ModelRequest, ResponsesModel } from '../../controller/model/responses-model.js';
import { createSidecarClient } from '../../controller/sidecar-client/create-sidecar-client.js';
import type { ToolDefinition } from '../../controller/sidecar-client/sidecar-types.js';
import { spawnSidecar } from '../../controller/sidecar-client/spawn-sidecar.js';
import { quantile, type BenchRow } from '../bench-row.js';

const TURNS = 12;
const WARM_UP_TURNS = 2;

function thousandTools(): ToolDefinition[] {
  return Array.from({ length: 1_000 }, (_, index) => {
    const parameters = {
      type: 'object',
      properties: { path: { type: 'string', description: 'A path.' }, limit: { type: 'integer', minimum: 1, maximum: 100 } },
      required: ['path'],
      additionalProperties: false,
    };
    return {
      name: `tool_${index}`,
      description: `Tool number ${index}: does one small thing with a path.`,
      parameters,
      parametersJson: JSON.stringify(parameters),
      strict: index % 2 === 0,
      ...(index % 10 === 0 ? {} : { namespace: `ns_${index % 10}`, namespaceDescription: `Namespace ${index % 10}.` }),
      deferLoading: index % 3 === 0,
      executionMode: 'parallel',
      readOnly: true,
      destructive: false,
    };
  });
}

function timeMicros(fn: () => void, rounds: number): number[] {
  for (let index = 0; index < 20; index++) fn();
  const samples: number[] = [];
  for (let index = 0; index < rounds; index++) {
    const start = performance.now();
    fn();
    samples.push((performance.now() - start) * 1000);
  }
  return samples;
}

/** Runs the controller bench. */
export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const workspace = mkdtempSync(join(tmpdir(), 'bench-controller-'));
  cpSync(fileURLToPath(new URL('../../controller/sample-workspace/', import.meta.url)), workspace, { recursive: true });
  const sidecar = await spawnSidecar({ workspace });
  const embedded = await startEmbeddedModel();
  const client = createSidecarClient({ address: sidecar.address });
  try {
    const inner = createOpenAIResponsesModel({ model: 'embedded', apiKey: 'none', baseURL: embedded.baseURL, stream: true, maxRetries: 0 });
    const recorded: ModelRequest[] = [];
    const model: ResponsesModel = {
      description: inner.description,
      create(request, options) {
        recorded.push(request);
        return inner.create(request, options);
      },
    };
    const turnMs: number[] = [];
    const overheadPerCall: number[] = [];
    const rawRoundTrip: number[] = [];
    let calls = 0;
    for (let index = 0; index < WARM_UP_TURNS + TURNS; index++) {
      recorded.length = 0;
      const turn = await client.openTurn({ agentId: `bench-${index}`, turnId: `bench-${index}` });
      const start = performance.now();
      const outcome = await runTurn({ model, turn, prompt: 'Describe this project.', signal: AbortSignal.timeout(60_000) });
      const elapsed = performance.now() - start;
      await turn.close();
      if (outcome.status !== 'completed') throw new Error(`bench turn ended ${outcome.status}: ${outcome.error}`);
      calls = outcome.input.filter((item) => item.type === 'function_call_output').length;
      // The model server's share: the same bodies, replayed over raw HTTP (SSE read to the end).
      let modelMs = 0;
      for (const request of recorded) {
        const body = JSON.stringify({ model: 'embedded', ...request, store: false, stream: true });
        const replayStart = performance.now();
        const response = await fetch(`${embedded.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await response.text();
        const replayMs = performance.now() - replayStart;
        modelMs += replayMs;
        if (index >= WARM_UP_TURNS) rawRoundTrip.push(replayMs);
      }
      if (index < WARM_UP_TURNS) continue;
      turnMs.push(elapsed);
      overheadPerCall.push((elapsed - modelMs) / Math.max(1, calls));
    }
    const rawP50 = quantile(rawRoundTrip, 0.5);
    rows.push({
      suite: 'controller',
      name: `whole turn, embedded model + real sidecar (${calls} calls, ${recorded.length} model calls)`,
      value: quantile(turnMs, 0.5),
      unit: 'ms p50',
    });
    const overhead = quantile(overheadPerCall, 0.5);
    rows.push({
      suite: 'controller',
      name: 'loop overhead per tool call (turn − model-server time) / calls',
      value: overhead,
      unit: 'ms p50',
      reference: 'raw HTTP round trip to the embedded model p50',
      ratio: overhead / rawP50,
      note: `reference ${rawP50.toFixed(2)} ms; controller (openai SDK parsing included) + gRPC + sidecar per call`,
    });

    const tools = thousandTools();
    const collect = timeMicros(() => collectProviderTools(tools, { toolSearch: 'hosted', flattenNamespaces: false }), 200);
    const stringify = timeMicros(() => JSON.stringify(tools), 200);
    const collectP50 = quantile(collect, 0.5);
    const stringifyP50 = quantile(stringify, 0.5);
    rows.push({
      suite: 'controller',
      name: 'schema collection, 1,000 tools (namespaces, deferred; objects, not serialized)',
      value: collectP50,
      unit: 'µs p50',
      reference: 'JSON.stringify of the same tools p50',
      ratio: collectP50 / stringifyP50,
      note: `reference ${stringifyP50.toFixed(0)} µs`,
    });
  } finally {
    client.close();
    await embedded.close();
    await sidecar.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
  return rows;
}
