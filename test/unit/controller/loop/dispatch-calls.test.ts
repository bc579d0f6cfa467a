import { describe, expect, it } from 'vitest';
import { dispatchCalls } from '../../../../controller/loop/dispatch-calls.js';
import { createToolCatalog } from '../../../../controller/loop/tool-catalog.js';
import { functionCallItem } from '../../../../controller/model/responses-wire.js';
import type { FunctionCallItem } from '../../../../controller/model/responses-model.js';
import { CallState } from '../../../../controller/sidecar-client/call-state.js';
import type { ToolTurn } from '../../../../controller/sidecar-client/sidecar-types.js';
import { tool } from '../tool-definitions.js';

/** An in-process Turn (unit test only) with a stated in-flight limit: records sends and the peak, refuses past the limit as the sidecar does. */
function limitedTurn(maxCallsInFlight: number) {
  const sent: string[] = [];
  let running = 0;
  let peak = 0;
  const turn: ToolTurn = {
    tools: [tool({ name: 'par' }), tool({ name: 'seq', executionMode: 'sequential' })],
    instructions: '',
    failure: undefined,
    maxCallsInFlight,
    call(request) {
      const state = new CallState(request.callId);
      sent.push(request.callId);
      if (running >= maxCallsInFlight) {
        state.finish({ callId: request.callId, content: [], completedLabel: '', terminateTurn: false, repairs: [], durationMs: 0, error: { code: 'too_many_calls', message: 'too many' } });
        return state;
      }
      peak = Math.max(peak, ++running);
      setTimeout(() => {
        running--;
        state.finish({ callId: request.callId, content: [{ type: 'text', text: 'ok' }], completedLabel: 'done', terminateTurn: false, repairs: [], durationMs: 1 });
      }, 5);
      return state;
    },
  };
  return { turn, sent, peak: () => peak };
}

describe('dispatchCalls', () => {
  it("queues beyond the turn's in-flight limit, sends in call order and keeps a sequential call a barrier", async () => {
    const { turn, sent, peak } = limitedTurn(3);
    const calls: FunctionCallItem[] = ['a', 'b', 'c', 'd', 'e', 'S', 'f', 'g', 'h', 'i'].map(
      (id) => functionCallItem({ callId: id, name: id === 'S' ? 'seq' : 'par', arguments: '{}' }) as FunctionCallItem,
    );
    const catalog = createToolCatalog({ tools: turn.tools, toolSearch: 'client', flattenNamespaces: false });
    const results = await dispatchCalls({ calls, catalog, turn, signal: new AbortController().signal, emit: () => {} });
    expect(results.map(({ call, result }) => [call.call_id, result.error?.code ?? 'ok'])).toEqual(calls.map((call) => [call.call_id, 'ok']));
    expect(sent).toEqual(calls.map((call) => call.call_id));
    expect(peak()).toBe(3);
  });
});
