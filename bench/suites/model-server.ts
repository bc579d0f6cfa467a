// What the controller's model client costs on a response with one 20 MB argument (a model writing
// a large file), streamed (SSE) and not (JSON), beside receiving the same bytes over raw HTTP from
// the same server in the same run. The SSE body is the one OpenAI sends: the arguments in a delta,
// in `function_call_arguments.done`, in `output_item.done` and in `response.completed` (~80 MB).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOpenAIResponsesModel } from '../../controller/model/openai-responses-model.js';
import { buildResponse, functionCallItem, readJsonBody, responseSseEvents } from '../../controller/model/responses-wire.js';
import { quantile, type BenchRow } from '../bench-row.js';

const ARGUMENT_BYTES = 20 * 1024 * 1024;
const ROUNDS = 7;
const WARM_UP = 1;

/** A server that answers every POST with the prepared body for the request's `stream` flag. */
async function startBigResponseServer(bodies: { sse: Buffer; json: Buffer }): Promise<{ baseURL: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    readJsonBody(req)
      .then((raw) => {
        const stream = (raw as { stream?: boolean }).stream === true;
        const body = stream ? bodies.sse : bodies.json;
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json', 'content-length': String(body.length) });
        res.end(body);
      })
      .catch((error: unknown) => {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(error) } }));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Runs the model-server bench. */
export async function run(): Promise<BenchRow[]> {
  const content = 'x'.repeat(ARGUMENT_BYTES);
  const call = functionCallItem({ callId: 'big', name: 'write_file', arguments: JSON.stringify({ path: 'big.txt', content }), id: 'fc_big' });
  const response = buildResponse({ model: 'bench', output: [call], id: 'resp_big' });
  const sse = Buffer.from(
    responseSseEvents(response, { deltaChars: ARGUMENT_BYTES * 2 })
      .map((event) => `event: ${event.type as string}\ndata: ${JSON.stringify(event)}\n\n`)
      .join(''),
  );
  const json = Buffer.from(JSON.stringify(response));
  const server = await startBigResponseServer({ sse, json });
  const rows: BenchRow[] = [];
  try {
    for (const stream of [true, false]) {
      const model = createOpenAIResponsesModel({ model: 'bench', apiKey: 'none', baseURL: server.baseURL, stream, maxRetries: 0 });
      const requestBody = JSON.stringify({ model: 'bench', input: [], store: false, stream });
      const readMs: number[] = [];
      const rawMs: number[] = [];
      for (let index = 0; index < WARM_UP + ROUNDS; index++) {
        // Interleaved, so the shared machine's noise falls on both alike.
        let start = performance.now();
        const result = await model.create({ instructions: '', input: [], tools: [] }, { signal: AbortSignal.timeout(120_000) });
        const read = performance.now() - start;
        const argumentsText = (result.output[0] as { arguments?: string } | undefined)?.arguments;
        if (argumentsText?.length !== String(call.arguments).length) throw new Error('the 20 MB argument did not come back whole');
        start = performance.now();
        const raw = await fetch(`${server.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: requestBody, signal: AbortSignal.timeout(120_000) });
        const bytes = (await raw.arrayBuffer()).byteLength;
        const rawElapsed = performance.now() - start;
        if (bytes !== (stream ? sse : json).length) throw new Error(`raw read got ${bytes} bytes`);
        if (index < WARM_UP) continue;
        readMs.push(read);
        rawMs.push(rawElapsed);
      }
      const readP50 = quantile(readMs, 0.5);
      const rawP50 = quantile(rawMs, 0.5);
      const size = ((stream ? sse : json).length / (1024 * 1024)).toFixed(0);
      rows.push({
        suite: 'model-server',
        name: `read a response with one 20 MB argument, ${stream ? 'SSE' : 'JSON'} (${size} MiB body), model.create`,
        value: readP50,
        unit: 'ms p50',
        reference: 'the same bytes over raw HTTP (fetch + arrayBuffer) p50',
        ratio: readP50 / rawP50,
        note: `reference ${rawP50.toFixed(0)} ms; model.create also decodes the text and parses what the loop needs`,
      });
    }
  } finally {
    await server.close();
  }
  return rows;
}
