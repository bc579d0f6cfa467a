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

  it('fails with the provider message on response.failed and error events', async () => {
    const failed = { type: 'response.failed', response: { id: 'r', status: 'failed', error: { message: 'the server had an error' } } };
    await expect(readResponseStream(body(sse([failed]), 16))).rejects.toMatchObject({
      code: 'model_error',
      message: 'the model response ended with response.failed: the server had an error',
    });
    const error = { type: 'error', code: 'rate_limit', message: 'slow down' };
    await expect(readResponseStream(body(sse([error], { names: false }), 16))).rejects.toThrow('ended with error: slow down');
  });

  it('fails when the stream ends before response.completed, or a needed event is not JSON', async () => {
    const events = responseSseEvents(response).slice(0, -1);
    await expect(readResponseStream(body(sse(events), 32))).rejects.toThrow('ended without response.completed');
    await expect(readResponseStream(body('event: response.completed\ndata: {"type":\n\n', 8))).rejects.toThrow('not JSON');
    await expect(readResponseStream(null)).rejects.toThrow('without a body');
  });

  it('skips deltas unparsed: a broken delta does not fail the stream', async () => {
    const text = `event: response.output_text.delta\ndata: {not json\n\n${sse(responseSseEvents(response))}`;
    expect((await readResponseStream(body(text, 10))).id).toBe('resp_1');
  });
});
