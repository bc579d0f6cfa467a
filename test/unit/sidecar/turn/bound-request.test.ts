import { describe, expect, it } from 'vitest';
import { boundCancelReason, checkCallRequest, checkClientReply, quotePrefix, REQUEST_LIMITS } from '../../../../sidecar/turn/bound-request.js';

const call = (overrides: Partial<{ callId: string; name: string; namespace: string }>) => ({ callId: 'c1', name: 'noop', namespace: '', argumentsJson: '{}', deadlineMs: 0, ...overrides });

describe('request bounds', () => {
  it('lets ordinary calls through and refuses oversized ids, names and namespaces with a short message', () => {
    expect(checkCallRequest(call({}))).toBeUndefined();
    expect(checkCallRequest(call({ callId: 'i'.repeat(REQUEST_LIMITS.callIdBytes) }))).toBeUndefined();
    expect(checkCallRequest(call({ callId: 'i'.repeat(REQUEST_LIMITS.callIdBytes + 1) }))).toMatchObject({ code: 'invalid_arguments', message: expect.stringMatching(/call_id is 513 bytes/) });
    const name = checkCallRequest(call({ name: 'n'.repeat(9 * 1024 * 1024) }));
    expect(name?.code).toBe('unknown_tool');
    expect(name!.message.length).toBeLessThan(400);
    // Bytes, not characters: 100 three-byte characters are 300 bytes.
    expect(checkCallRequest(call({ namespace: '€'.repeat(100) }))?.code).toBe('unknown_tool');
  });

  it('cuts cancel reasons, checks reply ids and control reply sizes, quotes prefixes', () => {
    expect(boundCancelReason('r'.repeat(5_000))!.length).toBeLessThan(1_100);
    expect(boundCancelReason(undefined)).toBeUndefined();
    expect(checkClientReply({ requestId: 'r1', controlReplyBytes: 10 })).toBeUndefined();
    expect(checkClientReply({ requestId: 'r'.repeat(300) })).toMatch(/request_id is 300 bytes/);
    expect(checkClientReply({ requestId: 'r1', controlReplyBytes: REQUEST_LIMITS.controlReplyBytes + 1 })).toMatch(/control reply/);
    // A sidecar started with a larger --max-client-message-bytes takes larger replies; a smaller one, fewer.
    expect(checkClientReply({ requestId: 'r1', controlReplyBytes: REQUEST_LIMITS.controlReplyBytes + 1 }, 2 * REQUEST_LIMITS.controlReplyBytes)).toBeUndefined();
    expect(checkClientReply({ requestId: 'r1', controlReplyBytes: 2049 }, 2048)).toMatch(/the control reply is 2049 bytes, over the limit of 2048/);
    expect(quotePrefix('short')).toBe('"short"');
    expect(quotePrefix('x'.repeat(1_000))).toMatch(/… \(1000 characters\)$/);
  });
});
