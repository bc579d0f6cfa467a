import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { loadSync } from '@grpc/proto-loader';
import { TurnResponse, type ToolResult } from '../../../../src/gen/toolruntime/v1/sidecar.js';
import { encodeTurnResponse } from '../../../../sidecar/grpc/encode-turn-response.js';

const result = (overrides: Partial<ToolResult>): TurnResponse => ({
  callId: 'call_1',
  event: {
    $case: 'result',
    value: { content: [], detailsJson: '', completedLabel: '', terminateTurn: false, error: undefined, repairs: [], durationMs: 0, ...overrides },
  },
});

const cases: Array<[string, TurnResponse]> = [
  ['no event, no call id', { callId: '', event: undefined }],
  ['activity with an empty label (the oneof is still present)', { callId: 'c', event: { $case: 'activityStarted', value: { label: '' } } }],
  ['activity with a non-ASCII label', { callId: 'c-é', event: { $case: 'activityStarted', value: { label: 'Lecture de « café » 🚀' } } }],
  ['presentation', { callId: 'p', event: { $case: 'presentation', value: { kind: 'command.output', payloadJson: '{"stream":"stdout","text":"hi\\n"}' } } }],
  ['presentation with a lone surrogate', { callId: 'p', event: { $case: 'presentation', value: { kind: 'k', payloadJson: 'bad \ud800 half' } } }],
  ['empty result', result({})],
  [
    'full result',
    result({
      content: [
        { part: { $case: 'text', value: 'ok' } },
        { part: { $case: 'json', value: '{"a":1}' } },
        { part: { $case: 'image', value: { data: Buffer.from([0, 1, 2, 255]), mimeType: 'image/png' } } },
        { part: { $case: 'image', value: { data: Buffer.alloc(0), mimeType: '' } } },
        { part: undefined },
      ],
      detailsJson: '{"details":true}',
      completedLabel: 'Done',
      terminateTurn: true,
      error: { code: 'tool_failed', message: 'it broke' },
      repairs: ['strip_code_fence', 'jsonrepair'],
      durationMs: 1234,
    }),
  ],
  ['error with empty parts', result({ error: { code: '', message: '' } })],
  ['long text (multi-byte varint lengths)', result({ content: [{ part: { $case: 'text', value: 'x'.repeat(20_000) + 'é'.repeat(70_000) } }] })],
  ['large image', result({ content: [{ part: { $case: 'image', value: { data: Buffer.alloc(20_000, 7), mimeType: 'image/jpeg' } } }] })],
  [
    'client request: control (through ts-proto)',
    {
      callId: 'call_9',
      event: {
        $case: 'clientRequest',
        value: { requestId: 'r1', request: { $case: 'control', value: { request: { $case: 'showJob', value: { agentId: '', jobId: 'job-é' } } } } },
      },
    },
  ],
  [
    'client request: approval (through ts-proto)',
    {
      callId: 'call_10',
      event: {
        $case: 'clientRequest',
        value: {
          requestId: 'r2',
          request: { $case: 'approval', value: { toolName: 'run_command', namespace: '', label: 'Running rm -rf build', parametersJson: '{"command":"rm -rf build"}', readOnly: false, destructive: true } },
        },
      },
    },
  ],
  // Short ASCII strings are measured and written in JS, longer or non-ASCII ones by Buffer: both sides of the line.
  ...['a'.repeat(64), 'a'.repeat(65), `${'a'.repeat(63)}é`, `${'a'.repeat(63)}\u007f`, `\u0000${'b'.repeat(30)}`, '🚀'].map((text): [string, TurnResponse] => [
    `a ${text.length}-character string written by the ${text.length <= 64 && !/[^\u0000-\u007f]/.test(text) ? 'JS' : 'Buffer'} path`,
    { callId: text, event: { $case: 'activityStarted', value: { label: text } } },
  ]),
  ...[1, 127, 128, 16_383, 16_384, 2 ** 21, 2 ** 28, 2 ** 31, 0xffffffff].map((durationMs): [string, TurnResponse] => [`duration ${durationMs}`, result({ durationMs })]),
];

describe('encodeTurnResponse', () => {
  it.each(cases)('writes the same bytes as ts-proto: %s', (_name, message) => {
    const expected = Buffer.from(TurnResponse.encode(message).finish());
    const actual = encodeTurnResponse(message);
    expect(actual.equals(expected)).toBe(true);
    expect(TurnResponse.decode(actual)).toEqual(TurnResponse.decode(expected));
  });

  it('hands the tool set to ts-proto', () => {
    const message: TurnResponse = { callId: '', event: { $case: 'toolSet', value: { tools: [], instructions: 'Use the tools.', maxCallsInFlight: 256 } } };
    expect(encodeTurnResponse(message).equals(Buffer.from(TurnResponse.encode(message).finish()))).toBe(true);
  });
});

// The hand-written encoder knows these fields and no others. When the proto grows a field in one
// of these messages, this fails, so the field is taught to encode-turn-response.ts (and a byte
// comparison case added above) instead of being dropped from the wire without a word.
describe('encodeTurnResponse and the proto', () => {
  it('covers every field of the messages it encodes by hand', () => {
    const definition = loadSync('toolruntime/v1/sidecar.proto', { keepCase: true, includeDirs: [fileURLToPath(new URL('../../../../proto/', import.meta.url))] });
    const fields = (message: string) => {
      const type = (definition[`toolruntime.v1.${message}`] as { type: { field: Array<{ name: string; number: number }> } }).type;
      return type.field.map((field) => `${field.number}:${field.name}`);
    };
    expect({
      TurnResponse: fields('TurnResponse'),
      ActivityStarted: fields('ActivityStarted'),
      PresentationEvent: fields('PresentationEvent'),
      ToolResult: fields('ToolResult'),
      ContentPart: fields('ContentPart'),
      ImagePart: fields('ImagePart'),
      ToolError: fields('ToolError'),
    }).toEqual({
      TurnResponse: ['1:call_id', '2:tool_set', '3:activity_started', '4:presentation', '5:result', '6:client_request'],
      ActivityStarted: ['1:label'],
      PresentationEvent: ['1:kind', '2:payload_json'],
      ToolResult: ['1:content', '2:details_json', '3:completed_label', '4:terminate_turn', '5:error', '6:repairs', '7:duration_ms'],
      ContentPart: ['1:text', '2:image', '3:json'],
      ImagePart: ['1:data', '2:mime_type'],
      ToolError: ['1:code', '2:message'],
    });
  });
});
