import { describe, expect, it } from 'vitest';
import { REPAIR_INSTRUCTION, runTaskTurn } from '../../../../controller/loop/run-task-turn.js';
import type { ModelRequest, ResponseItem, ResponsesModel } from '../../../../controller/model/responses-model.js';
import { functionCallItem, messageItem } from '../../../../controller/model/responses-wire.js';
import { CallState } from '../../../../controller/sidecar-client/call-state.js';
import type { ToolTurn } from '../../../../controller/sidecar-client/sidecar-types.js';
import { tool } from '../tool-definitions.js';

/**
 * An in-process task turn (unit tests only): submit_result accepts `{result: {ok: true}}` (terminates,
 * details carry the value) and rejects anything else; `finish` terminates without a submission.
 */
function taskTurn(): ToolTurn {
  return {
    tools: [tool({ name: 'submit_result', executionMode: 'sequential' }), tool({ name: 'finish' })],
    instructions: '',
    failure: undefined,
    call(request) {
      const state = new CallState(request.callId);
      const args = JSON.parse(request.argumentsJson) as { result?: { ok?: boolean } };
      const accepted = request.name === 'submit_result' && args.result?.ok === true;
      queueMicrotask(() =>
        state.finish({
          callId: request.callId,
          content: [{ type: 'text', text: accepted ? 'Result accepted.' : request.name === 'finish' ? 'finished' : 'The result was rejected.' }],
          ...(accepted ? { details: { accepted: true, result: args.result } } : request.name === 'submit_result' ? { details: { accepted: false } } : {}),
          completedLabel: '',
          terminateTurn: accepted || request.name === 'finish',
          repairs: [],
          durationMs: 0,
        }),
      );
      return state;
    },
  };
}

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

const submit = (callId: string, result: unknown) => functionCallItem({ callId, name: 'submit_result', arguments: JSON.stringify({ result }) });

describe('runTaskTurn (in-process fakes)', () => {
  it('returns the accepted value, after a rejection that kept the turn going', async () => {
    const model = scriptedModel([[submit('a', { ok: false })], [submit('b', { ok: true })]]);
    const outcome = await runTaskTurn({ model, turn: taskTurn(), prompt: 'task' });
    expect(outcome).toEqual({ status: 'submitted', result: { ok: true }, modelCalls: 2, repaired: false, rejectedSubmissions: 1 });
  });

  it('sends exactly one repair instruction, and fails on a second answer without a submission', async () => {
    const model = scriptedModel([[messageItem('prose')], [messageItem('more prose')]]);
    const outcome = await runTaskTurn({ model, turn: taskTurn(), prompt: 'task' });
    expect(outcome).toMatchObject({ status: 'failed', turnStatus: 'completed', repaired: true, modelCalls: 2 });
    expect(model.requests).toHaveLength(2);
    const repairs = model.requests[1]!.input.filter((item) => JSON.stringify(item).includes(REPAIR_INSTRUCTION));
    expect(repairs).toHaveLength(1);
  });

  it('fails when a tool ends the turn without an accepted submission', async () => {
    const model = scriptedModel([[functionCallItem({ callId: 'f', name: 'finish', arguments: '{"key":"x"}' })]]);
    const outcome = await runTaskTurn({ model, turn: taskTurn(), prompt: 'task' });
    expect(outcome).toMatchObject({ status: 'failed', turnStatus: 'terminated', reason: 'a tool ended the turn without an accepted submit_result' });
  });

  it('does not repair past the model-call limit, and reports an abort as its status', async () => {
    const limited = await runTaskTurn({ model: scriptedModel([[messageItem('prose')]]), turn: taskTurn(), prompt: 'task', maxModelCalls: 1 });
    expect(limited).toMatchObject({ status: 'failed', turnStatus: 'completed', repaired: false });
    const controller = new AbortController();
    controller.abort();
    const aborted = await runTaskTurn({ model: scriptedModel([[submit('a', { ok: true })]]), turn: taskTurn(), prompt: 'task', signal: controller.signal });
    expect(aborted).toMatchObject({ status: 'failed', turnStatus: 'aborted' });
  });
});
