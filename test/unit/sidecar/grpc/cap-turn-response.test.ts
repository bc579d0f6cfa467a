import { describe, expect, it } from 'vitest';
import { TurnResponse, type ToolResult } from '../../../../src/gen/toolruntime/v1/sidecar.js';
import { capTurnResponse, minimalTurnResponse } from '../../../../sidecar/grpc/cap-turn-response.js';
import { createToolSidecarServiceDefinition } from '../../../../sidecar/grpc/encode-turn-response.js';

const LIMIT = 64 * 1024;
const size = (message: TurnResponse) => TurnResponse.encode(message).finish().length;
const result = (value: Partial<ToolResult>): TurnResponse => ({
  callId: 'c1',
  event: { $case: 'result', value: { content: [], detailsJson: '', completedLabel: 'done', terminateTurn: false, error: undefined, repairs: [], durationMs: 5, ...value } },
});

describe('capTurnResponse', () => {
  it('keeps content first, cuts the text that does not fit and says how many parts were dropped', () => {
    const big = result({
      content: [
        { part: { $case: 'text', value: 'a'.repeat(10_000) } },
        { part: { $case: 'text', value: 'b'.repeat(100_000) } },
        { part: { $case: 'image', value: { data: Buffer.alloc(50_000), mimeType: 'image/png' } } },
        { part: { $case: 'json', value: '{"x":1}' } },
      ],
      detailsJson: JSON.stringify({ blob: 'd'.repeat(30_000) }),
    });
    const capped = capTurnResponse(big, LIMIT);
    expect(size(capped)).toBeLessThanOrEqual(LIMIT);
    const value = capped.event?.$case === 'result' ? capped.event.value : undefined;
    expect(value?.content[0]).toEqual({ part: { $case: 'text', value: 'a'.repeat(10_000) } });
    expect(value?.content[1]?.part?.$case === 'text' && value.content[1].part.value).toMatch(/characters cut/);
    expect(value?.content.at(-1)?.part?.$case === 'text' && value.content.at(-1)?.part?.value).toMatch(/2 more content parts .* cut/);
    expect(JSON.parse(value!.detailsJson)).toEqual({ cut: expect.stringMatching(/details were \d+ bytes/) });
    expect(value?.completedLabel).toBe('done');
  });

  it('keeps content and details when cutting the error message is enough, and cuts a presentation payload to a note', () => {
    const fits = capTurnResponse(result({ content: [{ part: { $case: 'text', value: 'x'.repeat(1_000) } }], detailsJson: '{"small":true}', error: { code: 'tool_failed', message: 'e'.repeat(LIMIT) } }), LIMIT);
    expect(size(fits)).toBeLessThanOrEqual(LIMIT);
    expect(fits.event?.$case === 'result' && fits.event.value.detailsJson).toBe('{"small":true}');
    expect(fits.event?.$case === 'result' && fits.event.value.content[0]).toEqual({ part: { $case: 'text', value: 'x'.repeat(1_000) } });
    const event = capTurnResponse({ callId: 'c1', event: { $case: 'presentation', value: { kind: 'k', payloadJson: JSON.stringify('p'.repeat(LIMIT)) } } }, LIMIT);
    expect(event.event?.$case === 'presentation' && JSON.parse(event.event.value.payloadJson)).toEqual({ cut: expect.stringMatching(/payload was \d+ bytes/) });
  });

  it('falls back to an internal error result naming the limit', () => {
    const minimal = minimalTurnResponse(result({ terminateTurn: true }), LIMIT);
    expect(minimal.event?.$case === 'result' && minimal.event.value.error).toEqual({ code: 'internal', message: expect.stringMatching(/65536-byte message limit/) });
  });

  it('the service serialiser never returns more than the limit and leaves small messages as they are', () => {
    const serialize = createToolSidecarServiceDefinition({ maxMessageBytes: LIMIT }).turn.responseSerialize;
    const small = result({ content: [{ part: { $case: 'text', value: 'ok' } }] });
    expect(serialize(small).equals(Buffer.from(TurnResponse.encode(small).finish()))).toBe(true);
    const huge = result({ content: Array.from({ length: 20 }, () => ({ part: { $case: 'text' as const, value: 'z'.repeat(10_000) } })), error: { code: 'tool_failed', message: 'e'.repeat(100_000) } });
    expect(serialize(huge).length).toBeLessThanOrEqual(LIMIT);
  });
});
