import { describe, expect, it } from 'vitest';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { CallTool, TurnRequest } from '../../../../src/gen/toolruntime/v1/sidecar.js';
import { decodeCallRequest, decodeTurnRequest, undecodableReason } from '../../../../sidecar/grpc/decode-turn-request.js';

const call = (fields: Partial<CallTool>): Buffer =>
  Buffer.from(
    TurnRequest.encode({
      request: { $case: 'call', value: { callId: '', name: '', namespace: '', argumentsJson: '', deadlineMs: 0, traceparent: '', tracestate: '', ...fields } },
    }).finish(),
  );

/** A TurnRequest whose call holds `inner` as raw bytes (fields the encoder would never write). */
const rawCall = (inner: (writer: BinaryWriter) => void): Buffer => {
  const writer = new BinaryWriter();
  inner(writer);
  const body = writer.finish();
  return Buffer.from(new BinaryWriter().uint32(18).bytes(body).finish());
};

// decodeTurnRequest takes calls on a path of its own: whatever the frame, it must read what ts-proto reads.
const frames: Array<[string, Buffer]> = [
  ['a plain call', call({ callId: 'call_abc123', name: 'noop', argumentsJson: '{}' })],
  ['every field', call({ callId: 'c1', name: 'lookup', namespace: 'fixture_ns', argumentsJson: '{"q":"x"}', deadlineMs: 1500, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'a=b' })],
  ['an empty call', call({})],
  ['non-ASCII strings', call({ callId: 'c-é', name: 'lecture', argumentsJson: '{"text":"café 🚀"}' })],
  ['a leading U+FEFF kept as text', call({ callId: '\ufeffc', argumentsJson: '\ufeff{}' })],
  ['strings on both sides of the 64-byte line', call({ callId: 'a'.repeat(64), name: 'b'.repeat(65), argumentsJson: `{"x":"${'y'.repeat(5_000)}"}` })],
  ['a deadline at 2^28 - 1', call({ deadlineMs: 2 ** 28 - 1 })],
  ['a deadline past 2^28', call({ deadlineMs: 2 ** 28 })],
  ['the largest deadline', call({ deadlineMs: 0xffffffff })],
  ['a repeated field (the last one wins)', rawCall((w) => w.uint32(10).string('first').uint32(10).string('second').uint32(18).string('noop'))],
  ['an unknown field', rawCall((w) => w.uint32(10).string('c').uint32(66).string('unknown').uint32(18).string('noop'))],
  ['a known field with the wrong wire type', rawCall((w) => w.uint32(8).uint32(5).uint32(42).string('x').uint32(18).string('noop'))],
  ['invalid UTF-8', rawCall((w) => w.uint32(10).bytes(Buffer.from([0x63, 0xff, 0xfe, 0x64])).uint32(18).string('noop'))],
  ['a negative deadline written as int64', rawCall((w) => w.uint32(10).string('c').uint32(40).int64(-1))],
  ['a cancel', Buffer.from(TurnRequest.encode({ request: { $case: 'cancel', value: { callId: 'c1', reason: 'stop' } } }).finish())],
  ['an empty request', Buffer.alloc(0)],
  ['a call followed by a cancel (the last oneof wins)', Buffer.concat([call({ callId: 'c1', name: 'noop' }), Buffer.from(TurnRequest.encode({ request: { $case: 'cancel', value: { callId: 'c2', reason: '' } } }).finish())])],
];

const truncated: Array<[string, Buffer]> = [
  ['a call cut short', call({ callId: 'call_abc123', name: 'noop', argumentsJson: '{}' }).subarray(0, 9)],
  ['a length past the end', Buffer.from([18, 5, 10, 9, 0x61, 0x62])],
  ['a varint that never ends', Buffer.from([18, 3, 40, 0xff, 0xff])],
];

// The frames the fast path must take itself (the rest may go to ts-proto).
const fast = new Set(['a plain call', 'every field', 'an empty call', 'non-ASCII strings', 'a leading U+FEFF kept as text', 'strings on both sides of the 64-byte line', 'a deadline at 2^28 - 1', 'a repeated field (the last one wins)', 'invalid UTF-8']);

describe('decodeTurnRequest', () => {
  it.each(frames.filter(([name]) => fast.has(name)))('decodes a call on its own path: %s', (_name, bytes) => {
    expect(decodeCallRequest(bytes)).toEqual(TurnRequest.decode(bytes));
  });

  it.each(frames.filter(([name]) => !fast.has(name)))('leaves the rest to ts-proto: %s', (_name, bytes) => {
    expect(decodeCallRequest(bytes)).toBeUndefined();
  });

  it.each(frames)('reads what ts-proto reads: %s', (_name, bytes) => {
    const decoded = decodeTurnRequest(bytes);
    expect(undecodableReason(decoded)).toBeUndefined();
    expect(decoded).toEqual(TurnRequest.decode(bytes));
  });

  it.each(truncated)('refuses what ts-proto refuses: %s', (_name, bytes) => {
    expect(() => TurnRequest.decode(bytes)).toThrow();
    expect(undecodableReason(decodeTurnRequest(bytes))).toMatch(/is not a valid TurnRequest/);
  });
});
