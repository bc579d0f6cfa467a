import { describe, expect, it } from 'vitest';
import { runTurn, type TurnOutcome } from '../../../../controller/loop/run-turn.js';
import { INTERRUPTED_OUTPUT, type TurnJournal, type TurnRecord } from '../../../../controller/loop/turn-journal.js';
import type { ModelRequest, ResponseItem, ResponsesModel } from '../../../../controller/model/responses-model.js';
import { functionCallItem, messageItem } from '../../../../controller/model/responses-wire.js';
import { CallState } from '../../../../controller/sidecar-client/call-state.js';
import type { ToolTurn } from '../../../../controller/sidecar-client/sidecar-types.js';
import { tool } from '../tool-definitions.js';

const STEPS = 6; // six responses of two calls (a write, then a read), then the answer: 12 calls, 7 model calls

/** A Turn whose `write` and `read` count their executions by call id (the side effects). */
function countingTurn(executions: Map<string, number>): ToolTurn {
  return {
    tools: [tool({ name: 'write', readOnly: false, executionMode: 'sequential' }), tool({ name: 'read', readOnly: true, executionMode: 'sequential' })],
    instructions: '',
    failure: undefined,
    call(request) {
      executions.set(request.callId, (executions.get(request.callId) ?? 0) + 1);
      const state = new CallState(request.callId);
      setTimeout(() => state.finish({ callId: request.callId, content: [{ type: 'text', text: `${request.name} ${request.callId} ok` }], completedLabel: '', terminateTurn: false, repairs: [], durationMs: 1 }), 0);
      return state;
    },
  };
}

/** The model answers from the conversation alone: step n is the number of call outputs it has seen, halved. */
function conversationModel(asked: number[]): ResponsesModel & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    description: 'scripted',
    requests,
    async create(request) {
      requests.push(structuredClone(request));
      const step = request.input.filter((item) => item.type === 'function_call_output').length / 2;
      asked[step] = (asked[step] ?? 0) + 1;
      const output: ResponseItem[] =
        step < STEPS
          ? [functionCallItem({ callId: `w${step}`, name: 'write', arguments: '{"key":"a"}' }), functionCallItem({ callId: `r${step}`, name: 'read', arguments: '{"key":"b"}' })]
          : [messageItem(`done after ${request.input.length} items`)];
      return { id: `resp_${step}`, output };
    },
  };
}

function memoryJournal(records: TurnRecord[] = []): TurnJournal & { records: TurnRecord[] } {
  return { records, append: async (record) => void records.push(structuredClone(record)) };
}

async function run(journal: TurnJournal, executions: Map<string, number>, asked: number[], stopAt?: (step: string) => Promise<void> | void): Promise<TurnOutcome> {
  return runTurn({ model: conversationModel(asked), turn: countingTurn(executions), prompt: 'go', journal, ...(stopAt ? { stopAt } : {}) });
}

const killPoints = [
  ...Array.from({ length: STEPS }, (_, index) => `after-model-response:${index + 1}`),
  ...Array.from({ length: 2 * STEPS }, (_, index) => `during-call:${index + 1}`),
  ...Array.from({ length: 2 * STEPS }, (_, index) => `after-call:${index + 1}`),
];

describe('runTurn resumes from its journal', () => {
  it.each(killPoints)('stopped (a dead runner) at %s, a second run finishes with the same answer, each finished call run once', async (point) => {
    const reference = await run(memoryJournal(), new Map(), []);
    expect(reference.status).toBe('completed');

    const executions = new Map<string, number>();
    const asked: number[] = [];
    const journal = memoryJournal();
    let snapshot: TurnRecord[] | undefined;
    // The first runner "dies" at the point: it never goes on, and what the journal held then is all there is.
    void run(journal, executions, asked, (step) => {
      if (step !== point) return;
      snapshot = structuredClone(journal.records);
      return new Promise<void>(() => {});
    });
    await waitFor(() => snapshot !== undefined);
    const resumed = await run(memoryJournal(snapshot), executions, asked);

    expect(resumed.status).toBe('completed');
    expect(resumed.finalText).toBe(reference.finalText);
    // Each model call asked once, over both runners.
    expect(asked).toEqual(Array.from({ length: STEPS + 1 }, () => 1));
    const inFlight = point.startsWith('during-call:') ? Number(point.split(':')[1]) : 0;
    for (let number = 1; number <= 2 * STEPS; number++) {
      const callId = `${number % 2 === 1 ? 'w' : 'r'}${Math.floor((number - 1) / 2)}`;
      // The read in flight runs again; the write in flight does not, and the model is told so.
      expect([callId, executions.get(callId)]).toEqual([callId, number === inFlight && callId.startsWith('r') ? 2 : 1]);
    }
    const outputs = resumed.input.filter((item) => item.type === 'function_call_output');
    expect(outputs).toHaveLength(2 * STEPS);
    const interrupted = outputs.filter((item) => item.output === INTERRUPTED_OUTPUT).map((item) => item.call_id);
    expect(interrupted).toEqual(inFlight % 2 === 1 ? [`w${(inFlight - 1) / 2}`] : []);
  });

  it('a finished turn is not run again: a session continues with the next prompt after its whole history', async () => {
    const journal = memoryJournal();
    const asked: number[] = [];
    await run(journal, new Map(), asked);
    const model = conversationModel([]);
    const next = await runTurn({ model, turn: countingTurn(new Map()), prompt: 'and then?', journal });
    expect(next.status).toBe('completed');
    const input = model.requests[0]!.input;
    expect(input[0]).toMatchObject({ type: 'message', role: 'user' });
    expect(input.at(-1)).toMatchObject({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'and then?' }] });
    expect(input.filter((item) => item.type === 'function_call_output')).toHaveLength(2 * STEPS);
  });
});

describe('runTurn resumes calls the tool declares idempotent, and native calls', () => {
  /** One response of `output`, then an answer; the first runner dies during its first call. */
  async function dieDuringFirstCall(output: ResponseItem[], turn: (executions: Map<string, number>) => ToolTurn, nativeTools = false) {
    const model = (): ResponsesModel => ({
      description: 'scripted',
      async create(request) {
        const answered = request.input.some((item) => item.type.endsWith('_output'));
        return { id: answered ? 'resp_done' : 'resp_calls', output: answered ? [messageItem('done')] : output };
      },
    });
    const executions = new Map<string, number>();
    const journal = memoryJournal();
    let snapshot: TurnRecord[] | undefined;
    void runTurn({ model: model(), turn: turn(executions), prompt: 'go', journal, nativeTools, stopAt: (step) => {
      if (step !== 'during-call:1') return;
      snapshot = structuredClone(journal.records);
      return new Promise<void>(() => {});
    } });
    await waitFor(() => snapshot !== undefined);
    const resumed = await runTurn({ model: model(), turn: turn(executions), prompt: 'go', journal: memoryJournal(snapshot), nativeTools });
    return { resumed, executions };
  }

  it('a call in flight of a tool whose definition says idempotent runs again; one that does not is reported interrupted', async () => {
    const turnWith = (idempotent: boolean) => (executions: Map<string, number>): ToolTurn => ({
      ...countingTurn(executions),
      tools: [{ ...tool({ name: 'write', readOnly: false, executionMode: 'sequential' }), ...(idempotent ? { idempotent: true } : {}) }],
    });
    const calls = [functionCallItem({ callId: 'put1', name: 'write', arguments: '{}' })];
    const declared = await dieDuringFirstCall(calls, turnWith(true));
    expect(declared.executions.get('put1')).toBe(2);
    expect(declared.resumed.input.find((item) => item.type === 'function_call_output')?.output).toBe('write put1 ok');
    const undeclared = await dieDuringFirstCall(calls, turnWith(false));
    expect(undeclared.executions.get('put1')).toBe(1);
    expect(undeclared.resumed.input.find((item) => item.type === 'function_call_output')?.output).toBe(INTERRUPTED_OUTPUT);
  });

  it('a native shell call resumes with one output item: the finished command kept, the one in flight reported interrupted', async () => {
    const shellTurn = (executions: Map<string, number>): ToolTurn => ({
      ...countingTurn(executions),
      tools: [{ ...tool({ name: 'run_command', readOnly: false, executionMode: 'sequential' }), nativeTool: 'shell' }],
    });
    const shell: ResponseItem = { type: 'shell_call', call_id: 'sh', action: { commands: ['one', 'two'] }, status: 'completed' };
    const { resumed, executions } = await dieDuringFirstCall([shell], shellTurn, true);
    expect(resumed.status).toBe('completed');
    expect(executions.get('sh#1')).toBe(1);
    expect(executions.get('sh#2')).toBe(1);
    const outputs = resumed.input.filter((item) => item.type === 'shell_call_output');
    expect(outputs).toHaveLength(1);
    const entries = outputs[0]!.output as Array<{ stderr: string; outcome: { exit_code?: number } }>;
    expect(entries).toHaveLength(2);
    expect(entries[0]!.stderr).toContain('interrupted');
    expect(entries[0]!.outcome.exit_code).toBe(126);
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let tries = 0; !condition(); tries++) {
    if (tries > 2_000) throw new Error('the turn never reached its stop point');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
