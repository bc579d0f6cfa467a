import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkerTool, silentLogger, textResult } from '../../../../src/index.js';
import { defaultSidecarLimits } from '../../../../sidecar/sidecar-limits.js';
import type { TurnEvent } from '../../../../sidecar/turn/turn-event.js';
import { createTurnSession } from '../../../../sidecar/turn/turn-session.js';

// Scripted tools: each call waits on a gate the test opens, and records when it started.
function scripted() {
  const started: string[] = [];
  const gates = new Map<string, () => void>();
  const gate = (callId: string) => new Promise<void>((resolve) => gates.set(callId, resolve));
  const make = (name: string, executionMode: 'parallel' | 'sequential') =>
    defineWorkerTool({
      name,
      description: `${name} waits for the test`,
      schema: z.object({}),
      executionMode,
      async execute(_params, { callId, signal }) {
        started.push(callId);
        await Promise.race([gate(callId), new Promise((resolve) => signal.addEventListener('abort', resolve))]);
        return textResult(`done ${callId}`);
      },
    });
  return { started, open: (callId: string) => gates.get(callId)?.(), tools: [make('par', 'parallel'), make('seq', 'sequential')] };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));
const call = (callId: string, name: string) => ({ callId, name, namespace: '', argumentsJson: '{}', deadlineMs: 0 });

async function collect(events: AsyncIterable<TurnEvent>): Promise<TurnEvent[]> {
  const all: TurnEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe('createTurnSession', () => {
  it('schedules in call order and sends exactly one result per call', async () => {
    const { started, open, tools } = scripted();
    const session = createTurnSession({ tools, limits: defaultSidecarLimits, logger: silentLogger });
    const all = collect(session.events);
    session.call(call('a', 'par'));
    session.call(call('b', 'seq'));
    session.call(call('c', 'par'));
    session.call(call('a', 'par'));
    session.call(call('d', 'missing'));
    session.endInput();
    await flush();
    expect(started).toEqual(['a']);
    open('a');
    await flush();
    expect(started).toEqual(['a', 'b']);
    open('b');
    await flush();
    expect(started).toEqual(['a', 'b', 'c']);
    open('c');
    const events = await all;
    const results = events.filter((event) => event.type === 'result');
    expect(results.map((event) => event.callId).sort()).toEqual(['a', 'a', 'b', 'c', 'd']);
    const codes = results.map((event) => (event.type === 'result' ? event.result.error?.code : undefined));
    expect(codes.filter(Boolean).sort()).toEqual(['duplicate_call_id', 'unknown_tool']);
  });

  it('aborts waiting and running calls when the turn is aborted, each with an aborted result', async () => {
    const { tools } = scripted();
    const session = createTurnSession({ tools, limits: defaultSidecarLimits, logger: silentLogger });
    const all = collect(session.events);
    session.call(call('a', 'seq'));
    session.call(call('b', 'par'));
    await flush();
    session.abort('the turn ended');
    const events = await all;
    const results = events.flatMap((event) => (event.type === 'result' ? [[event.callId, event.result.error?.code]] : []));
    expect(results.sort()).toEqual([['a', 'aborted'], ['b', 'aborted']]);
    // b never started: it has no activity-started event.
    expect(events.filter((event) => event.type === 'activity-started').map((event) => event.callId)).toEqual(['a']);
  });
});

describe('createTurnSession: a call queued behind a sequential one when the turn is aborted (issue 23 item 1)', () => {
  it('never starts: no activity-started, no execute, an aborted result', async () => {
    const { started, tools } = scripted();
    const session = createTurnSession({ tools, limits: defaultSidecarLimits, logger: silentLogger });
    const all = collect(session.events);
    // p runs; s waits for p; q waits for s. Aborting releases s, whose release grants q's ticket
    // before q's own abort reaches it.
    session.call(call('p', 'par'));
    session.call(call('s', 'seq'));
    session.call(call('q', 'par'));
    await flush();
    expect(started).toEqual(['p']);
    session.abort('the turn ended');
    const events = await all;
    const results = events.flatMap((event) => (event.type === 'result' ? [[event.callId, event.result.error?.code]] : []));
    expect(results.sort()).toEqual([['p', 'aborted'], ['q', 'aborted'], ['s', 'aborted']]);
    expect(events.filter((event) => event.type === 'activity-started').map((event) => event.callId)).toEqual(['p']);
    expect(started).toEqual(['p']);
  });
});
