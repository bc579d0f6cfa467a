import { describe, expect, it } from 'vitest';
import { isToolRuntimeError } from '../../../../src/index.js';
import { defaultSidecarLimits } from '../../../../sidecar/sidecar-limits.js';
import { createClientRequests } from '../../../../sidecar/turn/client-requests.js';
import type { TurnEvent } from '../../../../sidecar/turn/turn-event.js';

const showJob = { request: { $case: 'showJob' as const, value: { agentId: '', jobId: 'j' } } };
const approval = { toolName: 'write_file', namespace: '', label: 'Writing x', parametersJson: '{}', readOnly: false, destructive: true };

function setup(limits = defaultSidecarLimits) {
  const requests = createClientRequests({ limits });
  const sent: TurnEvent[] = [];
  const running = new Set(['c1', 'c2']);
  requests.attach((event) => sent.push(event), (callId) => running.has(callId));
  const idOf = (index: number) => (sent[index] as Extract<TurnEvent, { type: 'client-request' }>).requestId;
  return { requests, sent, running, idOf };
}

describe('createClientRequests', () => {
  it('sends a request as a turn event and resolves it with the reply of its id only', async () => {
    const { requests, sent, idOf } = setup();
    const reply = requests.channel.request('c1', showJob, new AbortController().signal);
    expect(sent).toEqual([{ type: 'client-request', callId: 'c1', requestId: 'r1', request: { kind: 'control', control: showJob } }]);
    expect(requests.reply('r99', { kind: 'control', control: { reply: undefined } }, 10)).toBe(false);
    expect(requests.reply(idOf(0), { kind: 'control', control: { reply: { $case: 'error', value: { code: 'not_found', message: 'no' } } } }, 10)).toBe(true);
    await expect(reply).resolves.toEqual({ reply: { $case: 'error', value: { code: 'not_found', message: 'no' } } });
    expect(requests.reply(idOf(0), { kind: 'control', control: { reply: undefined } }, 10)).toBe(false);
    expect(requests.pending).toBe(0);
  });

  it('refuses a call that is not running, and bounds requests per call and waiting per turn', async () => {
    const { requests } = setup({ ...defaultSidecarLimits, maxClientRequestsPerCall: 2, maxPendingClientRequestsPerTurn: 3 });
    const never = new AbortController().signal;
    await expect(requests.channel.request('gone', showJob, never)).rejects.toThrow('is not running in this turn');
    const first = requests.channel.request('c1', showJob, never);
    const second = requests.channel.request('c1', showJob, never);
    await expect(requests.channel.request('c1', showJob, never)).rejects.toThrow('already asked the client 2 times (the limit is 2)');
    void requests.channel.request('c2', showJob, never);
    await expect(requests.channel.request('c2', showJob, never)).rejects.toThrow('already waits for 3 client replies (the limit is 3)');
    expect(requests.pending).toBe(3);
    requests.callEnded('c1');
    expect(requests.pending).toBe(1);
    await expect(first).rejects.toThrow('the call ended before the client replied');
    await expect(second).rejects.toThrow('the call ended before the client replied');
  });

  it('rejects with the call\'s abort reason, and an answer of the wrong kind is not taken as a control reply', async () => {
    const { requests, idOf } = setup();
    const call = new AbortController();
    const waiting = requests.channel.request('c1', showJob, call.signal);
    call.abort(new Error('cancelled by the test'));
    await expect(waiting).rejects.toThrow('cancelled by the test');
    expect(requests.pending).toBe(0);
    const mismatched = requests.channel.request('c1', showJob, new AbortController().signal);
    requests.reply(idOf(1), { kind: 'approval', approved: true, reason: '' }, 10);
    const error = await mismatched.catch((caught: unknown) => caught);
    expect(isToolRuntimeError(error, 'invalid_request')).toBe(true);
    const decision = requests.approve('c2', approval, new AbortController().signal);
    requests.reply(idOf(2), { kind: 'control', control: { reply: undefined } }, 10);
    await expect(decision).resolves.toMatchObject({ approved: false });
  });

  it('an oversized reply fails the request with the sizes', async () => {
    const { requests, idOf } = setup({ ...defaultSidecarLimits, maxClientMessageBytes: 100 });
    const waiting = requests.channel.request('c1', showJob, new AbortController().signal);
    requests.reply(idOf(0), { kind: 'control', control: { reply: undefined } }, 101);
    await expect(waiting).rejects.toThrow("the client's reply was 101 bytes, over the limit of 100");
  });

  it('once closed (the client half-closed), waiting and later requests fail at once', async () => {
    const { requests } = setup();
    const waiting = requests.channel.request('c1', showJob, new AbortController().signal);
    requests.close('the client closed its side');
    await expect(waiting).rejects.toThrow('the client closed its side');
    await expect(requests.approve('c2', approval, new AbortController().signal)).rejects.toThrow('the client closed its side');
    expect(requests.pending).toBe(0);
  });
});
