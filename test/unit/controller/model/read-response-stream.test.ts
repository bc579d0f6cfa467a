import { describe, expect, it } from 'vitest';
import { readResponseStream } from '../../../../controller/model/read-response-stream.js';
import { buildResponse, functionCallItem, messageItem, responseSseEvents } from '../../../../controller/model/responses-wire.js';

/** The SSE text the wire helpers write for `events` (with `event:` lines unless `names` is false). */
function sse(events: Array<Record<string, unknown>>, options: { names?: boolean; newline?: string } = {}): string {
  const newline = options.newline ?? '\n';
  return events
    .map((event) => `${options.names === false ? '' : `event: ${event.type as string}${newline}`}data: ${JSON.stringify(event)}${newline}${newline}`)
    .join('');
}

/** A byte stream of `text`, cut into chunks of `size` bytes (so UTF-8 characters and CRLFs split). */
function body(text: string, size: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + size));
      offset += size;
    },
  });
}

const output = [
  functionCallItem({ callId: 'c1', name: 'read_file', arguments: '{"path":"README.md"}', id: 'fc_1' }),
  messageItem('Ünïcödé answer — with “quotes” and 🙂', 'msg_1'),
];
const response = buildResponse({ model: 'm', output, id: 'resp_1', inputChars: 40 });

describe('readResponseStream', () => {
  it('returns the completed response, whatever the chunking, the line endings and the event names', async () => {
    for (const text of [sse(responseSseEvents(response)), sse(responseSseEvents(response), { newline: '\r\n' }), sse(responseSseEvents(response), { names: false })]) {
      for (const size of [1, 7, 64, 1 << 20]) {
        const result = await readResponseStream(body(text, size));
        expect(result).toEqual({ id: 'resp_1', output, usage: response.usage });
      }
    }
  });

  it('assembles the output_item.done items in output order when response.completed has no output', async () => {
    const events = responseSseEvents(response);
    const completed = events.at(-1) as { response: Record<string, unknown> };
    completed.response = { ...completed.response, output: [] };
    // Items arrive out of order: the output index decides.
    const done = events.filter((event) => event.type === 'response.output_item.done').reverse();
    const rest = events.filter((event) => event.type !== 'response.output_item.done');
    const result = await readResponseStream(body(sse([...done, ...rest]), 13));
    expect(result.output).toEqual(output);
  });

  it('returns a failed, cancelled or incomplete response with its status and reason; rejects on an error event', async () => {
    const failed = { type: 'response.failed', response: { id: 'r', status: 'failed', output: [], error: { code: 'server_error', message: 'the server had an error' } } };
    expect(await readResponseStream(body(sse([failed]), 16))).toMatchObject({ id: 'r', status: 'failed', reason: 'server_error: the server had an error' });
    const cancelled = { type: 'response.cancelled', response: { id: 'r2', output: [] } };
    expect(await readResponseStream(body(sse([cancelled]), 16))).toMatchObject({ id: 'r2', status: 'cancelled' });
    const incomplete = { type: 'response.incomplete', response: { id: 'r3', status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [messageItem('half an ans', 'msg_h')] } };
    expect(await readResponseStream(body(sse([incomplete]), 16))).toMatchObject({ status: 'incomplete', reason: 'max_output_tokens', output: [{ id: 'msg_h' }] });
    const error = { type: 'error', code: 'rate_limit', message: 'slow down' };
    await expect(readResponseStream(body(sse([error], { names: false }), 16))).rejects.toThrow('the model stream sent an error: rate_limit: slow down');
  });

  it('keeps a call that began but was cut off before its output_item.done as incomplete, beside the finished one', async () => {
    const finished = functionCallItem({ callId: 'c1', name: 'todo_read', arguments: '{}', id: 'fc_1' });
    const cut = functionCallItem({ callId: 'c2', name: 'write_file', arguments: '{"path":"notes.md","content":"abc', id: 'fc_2' });
    const events = responseSseEvents(buildResponse({ model: 'm', output: [finished, cut], id: 'resp_cut' }));
    // Everything up to the cut call's last delta; then the stream reports it ran out of output tokens.
    const lastDelta = events.findLastIndex((event) => event.type === 'response.function_call_arguments.delta');
    const streamed = [
      ...events.slice(0, lastDelta + 1),
      { type: 'response.incomplete', response: { id: 'resp_cut', status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [] } },
    ];
    const result = await readResponseStream(body(sse(streamed), 50));
    expect(result).toMatchObject({ status: 'incomplete', reason: 'max_output_tokens' });
    expect(result.output).toMatchObject([
      { call_id: 'c1', status: 'completed', arguments: '{}' },
      { call_id: 'c2', status: 'incomplete' },
    ]);
  });

  it('reads one 4 MB event whole, in 16 KiB chunks, with CRLF line endings', async () => {
    const content = 'x'.repeat(4 * 1024 * 1024);
    const big = functionCallItem({ callId: 'big', name: 'write_file', arguments: JSON.stringify({ path: 'a.txt', content }), id: 'fc_big' });
    const bigResponse = buildResponse({ model: 'm', output: [big], id: 'resp_big' });
    // The arguments in one delta event, as some servers send them, besides the done events.
    const events = [
      { type: 'response.output_item.added', output_index: 0, item: { ...big, arguments: '', status: 'in_progress' } },
      { type: 'response.function_call_arguments.delta', output_index: 0, item_id: 'fc_big', delta: big.arguments },
      { type: 'response.function_call_arguments.done', output_index: 0, item_id: 'fc_big', arguments: big.arguments },
      { type: 'response.output_item.done', output_index: 0, item: big },
      { type: 'response.completed', response: bigResponse },
    ];
    for (const newline of ['\n', '\r\n']) {
      const result = await readResponseStream(body(sse(events, { newline }), 16 * 1024));
      expect(JSON.parse(String(result.output[0]!.arguments)).content).toBe(content);
    }
  });

  it('fails when the stream ends before a terminal event, or a needed event is not JSON', async () => {
    const events = responseSseEvents(response).slice(0, -1);
    await expect(readResponseStream(body(sse(events), 32))).rejects.toThrow(/ended without a terminal event \(response.completed\) after \d+ events, the last response.output_item.done/);
    await expect(readResponseStream(body('event: response.completed\ndata: {"type":\n\n', 8))).rejects.toThrow('not JSON');
    await expect(readResponseStream(null)).rejects.toThrow('without a body');
  });

  it('says how far the response had got when the connection breaks, and names a stall', async () => {
    const text = sse(responseSseEvents(response).slice(0, 3));
    let pulls = 0;
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        // The bytes first, then the socket closes, as undici reports it ("terminated").
        if (pulls++ === 0) controller.enqueue(new TextEncoder().encode(text));
        else controller.error(new TypeError('terminated', { cause: new Error('other side closed') }));
      },
    });
    await expect(readResponseStream(broken)).rejects.toMatchObject({
      code: 'model_error',
      message: expect.stringMatching(/^the model server closed the connection mid-response after \d+ bytes \(3 events, the last response.output_item.added\) \(terminated: other side closed\)$/),
    });
    let cancelled = false;
    const stalled = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(text));
      },
      cancel() {
        cancelled = true;
      },
    });
    await expect(readResponseStream(stalled, { idleTimeoutMs: 200 })).rejects.toThrow(/sent nothing for 0.2 s after \d+ bytes \(3 events, the last response.output_item.added\): the stream stalled/);
    expect(cancelled).toBe(true);
  });

  it('rejects aborted at once when its signal aborts mid-stream', async () => {
    const controller = new AbortController();
    const never = new ReadableStream<Uint8Array>({ start() {} });
    const reading = readResponseStream(never, { signal: controller.signal });
    controller.abort();
    await expect(reading).rejects.toMatchObject({ code: 'aborted' });
  });

  it('skips deltas unparsed: a broken delta does not fail the stream', async () => {
    const text = `event: response.output_text.delta\ndata: {not json\n\n${sse(responseSseEvents(response))}`;
    expect((await readResponseStream(body(text, 10))).id).toBe('resp_1');
  });
});
