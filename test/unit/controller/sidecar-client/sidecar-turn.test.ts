import { EventEmitter, getEventListeners } from 'node:events';
import type { ClientDuplexStream } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { SidecarTurn } from '../../../../controller/sidecar-client/sidecar-turn.js';
import type { TurnRequest, TurnResponse } from '../../../../src/gen/toolruntime/v1/sidecar.js';

/** A stand-in for grpc-js's duplex stream (unit test only): records writes, answers open with a tool set. */
function fakeStream(maxCallsInFlight: number): ClientDuplexStream<TurnRequest, TurnResponse> & { written: TurnRequest[] } {
  const stream = Object.assign(new EventEmitter(), {
    written: [] as TurnRequest[],
    write(request: TurnRequest) {
      stream.written.push(request);
      if (request.request?.$case === 'open') {
        queueMicrotask(() => stream.emit('data', { callId: '', event: { $case: 'toolSet', value: { tools: [], instructions: '', maxCallsInFlight } } }));
      }
      return true;
    },
    end() {},
    cancel() {},
  });
  return stream as never;
}

describe('SidecarTurn', () => {
  it('takes the in-flight limit from the tool set, 256 when an older sidecar sends 0', async () => {
    expect((await SidecarTurn.open(fakeStream(8), { agentId: 'a', turnId: 't' })).maxCallsInFlight).toBe(8);
    expect((await SidecarTurn.open(fakeStream(0), { agentId: 'a', turnId: 't' })).maxCallsInFlight).toBe(256);
  });

  it('refuses a call that cannot fit the message limit without writing it, and sends the next one', async () => {
    const stream = fakeStream(8);
    const turn = await SidecarTurn.open(stream, { agentId: 'a', turnId: 't' }, { maxMessageBytes: 1_000 });
    const big = turn.call({ callId: 'big', name: 'write_file', argumentsJson: JSON.stringify({ content: 'é'.repeat(600) }) });
    expect(await big.result).toMatchObject({
      callId: 'big',
      error: { code: 'arguments_too_large', message: expect.stringContaining('over the 1000-byte message limit') },
    });
    turn.call({ callId: 'small', name: 'todo_read', argumentsJson: '{}' });
    expect(stream.written.map((request) => request.request?.$case)).toEqual(['open', 'call']);
    expect(stream.written[1]!.request).toMatchObject({ value: { callId: 'small' } });
  });

  // Issue 23 item 2: the open timer was created before the aborted check and never cleared, so an
  // already-aborted open kept the process alive for openTimeoutMs; close() left its listener on the caller's signal.
  it('an open with an already-aborted signal rejects and leaves no timer behind', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    const stream = fakeStream(8);
    await expect(SidecarTurn.open(stream, { agentId: 'a', turnId: 't' }, { signal: AbortSignal.abort(), openTimeoutMs: 600_000 })).rejects.toMatchObject({ code: 'aborted' });
    expect(timers()).toBe(before);
    // Nothing was sent for a turn that was never to be opened.
    expect(stream.written).toEqual([]);
  });

  it("close leaves no listener on the caller's signal", async () => {
    const turn = await SidecarTurn.open(fakeStream(8), { agentId: 'a', turnId: 't' });
    const caller = new AbortController();
    await turn.close({ signal: caller.signal, timeoutMs: 10 });
    expect(getEventListeners(caller.signal, 'abort')).toEqual([]);
  });
});
