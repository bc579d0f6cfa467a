import { getEventListeners } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import type { CallEvent } from '../../../controller/sidecar-client/sidecar-types.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const dir = mkdtempSync(join(tmpdir(), 'sidecar-client-'));
const tokenFile = join(dir, 'token');
writeFileSync(tokenFile, 's3cret-token\n');
let sidecar: StartedSidecar;
let client: SidecarClient;

beforeAll(async () => {
  sidecar = await startSidecar({
    entry: 'test/fixtures/fixture-sidecar.ts',
    args: ['--listen', '127.0.0.1:0', '--workspace', dir, '--token-file', tokenFile],
  });
  client = createSidecarClient({ address: sidecar.address, token: 's3cret-token' });
});
afterAll(async () => {
  client?.close();
  await sidecar?.stop();
});

const signal = () => AbortSignal.timeout(15_000);

describe('createSidecarClient', () => {
  it('opens a turn with the bearer token and decodes the tool set', async () => {
    const turn = await client.openTurn({ agentId: 'a', turnId: 't1' }, { signal: signal() });
    const lookup = turn.tools.find((tool) => tool.name === 'lookup');
    expect(lookup).toMatchObject({ namespace: 'fixture_ns', executionMode: 'parallel', readOnly: true, deferLoading: false });
    expect(lookup!.parameters).toMatchObject({ type: 'object', properties: { key: { type: 'string' } } });
    expect(turn.tools.find((tool) => tool.name === 'sleep_sequential')!.executionMode).toBe('sequential');
    expect(turn.tools.find((tool) => tool.name === 'deferred_lookup')!.deferLoading).toBe(true);
    await turn.close();
    expect(turn.failure).toBeUndefined();
  });

  it('refuses to open a turn without the token', async () => {
    const anonymous = createSidecarClient({ address: sidecar.address, token: null });
    try {
      await expect(anonymous.openTurn({ agentId: 'a', turnId: 't2' }, { signal: signal() })).rejects.toMatchObject({ code: 'sidecar_unavailable' });
    } finally {
      anonymous.close();
    }
  });

  it('streams a call\'s events in order and runs many calls on one stream', async () => {
    const turn = await client.openTurn({ agentId: 'a', turnId: 't3' }, { signal: signal() });
    const emit = turn.call({ callId: 'e1', name: 'emit', argumentsJson: '{"count":3}' });
    const echoes = Array.from({ length: 20 }, (_, index) => turn.call({ callId: `x${index}`, name: 'echo', argumentsJson: JSON.stringify({ index }) }));
    const events: CallEvent[] = [];
    for await (const event of emit) events.push(event);
    expect(events.map((event) => (event.type === 'presentation' ? `${event.kind}` : event.type))).toEqual([
      'activity-started', 'fixture.tick', 'fixture.tick', 'fixture.tick', 'fixture.done', 'result',
    ]);
    expect(events[1]).toMatchObject({ payload: { index: 0 } });
    const results = await Promise.all(echoes.map((handle) => handle.result));
    expect(results.map((result) => result.content[0])).toEqual(echoes.map((_, index) => ({ type: 'text', text: JSON.stringify({ index }) })));
    const duplicate = await turn.call({ callId: 'x0', name: 'noop', argumentsJson: '{}' }).result;
    expect(duplicate.error?.code).toBe('duplicate_call_id');
    await turn.close();
  });

  it('cancels a call through its signal (CancelCall) and the stream stays usable', async () => {
    const turn = await client.openTurn({ agentId: 'a', turnId: 't4' }, { signal: signal() });
    const controller = new AbortController();
    const slow = turn.call({ callId: 's1', name: 'sleep', argumentsJson: '{"ms":30000}' }, { signal: controller.signal });
    for await (const event of slow) {
      if (event.type === 'activity-started') controller.abort();
    }
    expect((await slow.result).error?.code).toBe('aborted');
    expect((await turn.call({ callId: 'n1', name: 'noop', argumentsJson: '{}' }).result).content).toEqual([{ type: 'text', text: 'ok' }]);
    await turn.close();
    const late = await turn.call({ callId: 'n2', name: 'noop', argumentsJson: '{}' }).result;
    expect(late.error?.code).toBe('aborted');
  });
  it('watches a signal shared by many calls with one listener, and cancels all of them when it aborts', async () => {
    const turn = await client.openTurn({ agentId: 'a', turnId: 't5' }, { signal: signal() });
    const shared = new AbortController();
    const echoes = Array.from({ length: 32 }, (_, index) =>
      turn.call({ callId: `e${index}`, name: 'echo', argumentsJson: JSON.stringify({ index }) }, { signal: shared.signal }),
    );
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(1);
    const results = await Promise.all(echoes.map((handle) => handle.result));
    // Details travel as JSON text and are parsed when read.
    expect(results.map((result) => result.details)).toEqual(echoes.map((_, index) => ({ index })));
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);

    const sleeps = Array.from({ length: 3 }, (_, index) =>
      turn.call({ callId: `s${index}`, name: 'sleep', argumentsJson: '{"ms":30000}' }, { signal: shared.signal }),
    );
    for await (const event of sleeps[2]!) if (event.type === 'activity-started') break;
    shared.abort();
    expect((await Promise.all(sleeps.map((handle) => handle.result))).map((result) => result.error?.code)).toEqual(['aborted', 'aborted', 'aborted']);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect((await turn.call({ callId: 'n1', name: 'noop', argumentsJson: '{}' }).result).content).toEqual([{ type: 'text', text: 'ok' }]);
    await turn.close();
  });
});
