import { describe, expect, it } from 'vitest';
import { runTurn } from '../../../../controller/loop/run-turn.js';
import type { TurnEvent } from '../../../../controller/loop/turn-events.js';
import type { ModelRequest, ResponseItem, ResponsesModel } from '../../../../controller/model/responses-model.js';
import { functionCallItem, messageItem } from '../../../../controller/model/responses-wire.js';
import { CallState } from '../../../../controller/sidecar-client/call-state.js';
import type { CallRequest, ToolTurn } from '../../../../controller/sidecar-client/sidecar-types.js';
import { tool } from '../tool-definitions.js';

/** An in-process Turn (unit tests only): answers each call after `delays[name]` ms with its name and arguments. */
function fakeTurn(delays: Record<string, number> = {}): ToolTurn & { log: string[]; requests: CallRequest[] } {
  const log: string[] = [];
  const requests: CallRequest[] = [];
  return {
    tools: [tool({ name: 'par' }), tool({ name: 'seq', executionMode: 'sequential' }), tool({ name: 'end' })],
    instructions: 'Skill knowledge.',
    failure: undefined,
    log,
    requests,
    call(request) {
      requests.push(request);
      const state = new CallState(request.callId);
      log.push(`start ${request.callId}`);
      state.push({ type: 'activity-started', callId: request.callId, label: `Running ${request.name}` });
      setTimeout(() => {
        log.push(`end ${request.callId}`);
        state.finish({
          callId: request.callId,
          content: [{ type: 'text', text: `${request.name}:${request.argumentsJson}` }],
          completedLabel: `Ran ${request.name}`,
          terminateTurn: request.name === 'end',
          repairs: [],
          durationMs: 1,
        });
      }, delays[request.name] ?? 0);
      return state;
    },
  };
}

/** A scripted in-process model that records its requests. */
function scriptedModel(steps: ResponseItem[][]): ResponsesModel & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    description: 'scripted',
    requests,
    async create(request) {
      requests.push(structuredClone(request));
      const output = steps[requests.length - 1];
      if (!output) throw new Error('script exhausted');
      return { id: `resp_${requests.length}`, output };
    },
  };
}

const call = (callId: string, name: string, args = '{}') => functionCallItem({ callId, name, arguments: args });

describe('runTurn (in-process fakes)', () => {
  it('runs a sequential call as a barrier and records outputs in call order', async () => {
    const turn = fakeTurn({ par: 30 });
    const model = scriptedModel([[call('a', 'par'), call('b', 'par'), call('c', 'seq'), call('d', 'par')], [messageItem('done')]]);
    const events: TurnEvent[] = [];
    const outcome = await runTurn({ model, turn, prompt: 'go', onEvent: (event) => events.push(event) });
    expect(outcome.status).toBe('completed');
    expect(outcome.finalText).toBe('done');
    // a and b overlap; c starts after both ended; d starts after c ended.
    expect(turn.log).toEqual(['start a', 'start b', 'end a', 'end b', 'start c', 'end c', 'start d', 'end d']);
    const outputs = model.requests[1]!.input.filter((item) => item.type === 'function_call_output');
    expect(outputs.map((item) => [item.call_id, item.output])).toEqual([
      ['a', 'par:{}'],
      ['b', 'par:{}'],
      ['c', 'seq:{}'],
      ['d', 'par:{}'],
    ]);
    expect(model.requests[0]!.instructions).toContain('Skill knowledge.');
    expect(events.map((event) => event.type)).toContain('activity-completed');
    expect(events.at(-1)).toMatchObject({ type: 'turn-finished', status: 'completed', finalText: 'done', modelCalls: 2 });
  });

  it('stops on terminate_turn and at the model call limit', async () => {
    const terminated = await runTurn({ model: scriptedModel([[call('x', 'end', '{"t":1}')]]), turn: fakeTurn(), prompt: 'go' });
    expect(terminated).toMatchObject({ status: 'terminated', finalText: 'end:{"t":1}', modelCalls: 1 });

    const loopingModel = scriptedModel([[call('1', 'par')], [call('2', 'par')], [call('3', 'par')]]);
    const limited = await runTurn({ model: loopingModel, turn: fakeTurn(), prompt: 'go', maxModelCalls: 2 });
    expect(limited.status).toBe('max_model_calls');
    expect(loopingModel.requests).toHaveLength(2);
    expect(limited.input.filter((item) => item.type === 'function_call_output').map((item) => item.call_id)).toEqual(['1', '2']);
    // The last response's call was never sent: its output says the turn stopped.
    expect(limited.input.at(-1)).toMatchObject({ call_id: '2', output: expect.stringContaining('not run: the turn stopped at its limit of 2 model calls') });
  });

  it('reports a model failure as model_error with its message', async () => {
    const outcome = await runTurn({ model: scriptedModel([]), turn: fakeTurn(), prompt: 'go' });
    expect(outcome).toMatchObject({ status: 'model_error', error: 'script exhausted' });
  });
});
