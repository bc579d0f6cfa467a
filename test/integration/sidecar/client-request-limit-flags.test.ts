import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import type { ClientRequestHandler } from '../../../controller/sidecar-client/sidecar-types.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

// The reverse-request limits set by the sidecar's flags, enforced over real gRPC: the fixture
// sidecar parses its flags exactly as sidecar/main.ts does (runSidecarCli), so a limit that did not
// reach the turn would leave the defaults (32 per call, 64 waiting per turn, 1 MiB) in force.
const dir = mkdtempSync(join(tmpdir(), 'client-request-limits-'));
let sidecar: StartedSidecar;
let client: SidecarClient;

beforeAll(async () => {
  sidecar = await startSidecar({
    entry: 'test/fixtures/fixture-sidecar.ts',
    args: [
      '--workspace', dir, '--state-dir', join(dir, 'state'),
      '--max-client-requests-per-call', '3', '--max-pending-client-requests', '2', '--max-client-message-bytes', '2048',
    ],
    timeoutMs: 60_000,
  });
  client = createSidecarClient({ address: sidecar.address });
}, 90_000);
afterAll(async () => {
  client?.close();
  await sidecar?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

const signal = () => AbortSignal.timeout(30_000);
const text = (result: { content: Array<{ type: string; text?: string }> }) => result.content.map((part) => part.text ?? '').join('');

/** Answers ShowJob with a job whose prompt is `promptChars` long. */
const answering =
  (promptChars = 10): ClientRequestHandler =>
  async (request) => {
    if (request.kind !== 'control' || request.control.request?.$case !== 'showJob') throw new Error('unexpected request');
    const job = { jobId: request.control.request.value.jobId, agentId: 'agent-l', prompt: 'p'.repeat(promptChars), state: 2, finalText: '', error: '', createdAt: '', startedAt: '', finishedAt: '' };
    return { kind: 'control', control: { reply: { $case: 'showJob', value: { job } } } };
  };

describe('sidecar flags for the reverse-request limits', () => {
  it('--max-client-requests-per-call 3: a call may ask three times, the fourth request fails the call', async () => {
    const turn = await client.openTurn({ agentId: 'agent-l', turnId: 'per-call', controlPlane: true }, { signal: signal(), onClientRequest: answering() });
    const three = await turn.call({ callId: 'ok', name: 'control_probe', argumentsJson: '{"job_id":"j","times":3}' }).result;
    expect(three.error, text(three)).toBeUndefined();
    expect(JSON.parse(text(three))).toHaveLength(3);
    const four = await turn.call({ callId: 'over', name: 'control_probe', argumentsJson: '{"job_id":"j","times":4}' }).result;
    expect(four.error?.code).toBe('tool_failed');
    expect(four.error?.message).toContain('already asked the client 3 times (the limit is 3)');
    await turn.close();
  });

  it('--max-pending-client-requests 2: a third request waiting at once fails, the two others are answered', async () => {
    const asked: Array<() => void> = [];
    const handler: ClientRequestHandler = (request, handlerSignal) =>
      new Promise((resolve, reject) => {
        asked.push(() => resolve(answering()(request, handlerSignal) as never));
        handlerSignal.addEventListener('abort', () => reject(handlerSignal.reason));
      });
    const turn = await client.openTurn({ agentId: 'agent-l', turnId: 'pending', controlPlane: true }, { signal: signal(), onClientRequest: handler });
    const first = turn.call({ callId: 'p1', name: 'control_probe', argumentsJson: '{"job_id":"a"}' }).result;
    const second = turn.call({ callId: 'p2', name: 'control_probe', argumentsJson: '{"job_id":"b"}' }).result;
    const deadline = Date.now() + 20_000;
    while (asked.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(asked).toHaveLength(2);
    const third = await turn.call({ callId: 'p3', name: 'control_probe', argumentsJson: '{"job_id":"c"}' }).result;
    expect(third.error?.code).toBe('tool_failed');
    expect(third.error?.message).toContain('this turn already waits for 2 client replies (the limit is 2)');
    for (const answer of asked) answer();
    expect((await first).error).toBeUndefined();
    expect((await second).error).toBeUndefined();
    expect(asked).toHaveLength(2);
    await turn.close();
  });

  it('--max-client-message-bytes 2048: a larger control request or reply fails the call, a smaller one passes', async () => {
    const turn = await client.openTurn({ agentId: 'agent-l', turnId: 'bytes', controlPlane: true }, { signal: signal(), onClientRequest: answering(1_500) });
    const small = await turn.call({ callId: 'small', name: 'control_probe', argumentsJson: '{"job_id":"j"}' }).result;
    expect(small.error, text(small)).toBeUndefined();
    const bigRequest = await turn.call({ callId: 'big-request', name: 'control_probe', argumentsJson: JSON.stringify({ job_id: 'j'.repeat(3_000) }) }).result;
    expect(bigRequest.error?.code).toBe('tool_failed');
    expect(bigRequest.error?.message).toMatch(/the control request is \d+ bytes, over the limit of 2048/);
    await turn.close();
    const bigTurn = await client.openTurn({ agentId: 'agent-l', turnId: 'bytes-reply', controlPlane: true }, { signal: signal(), onClientRequest: answering(3_000) });
    const bigReply = await bigTurn.call({ callId: 'big-reply', name: 'control_probe', argumentsJson: '{"job_id":"j"}' }).result;
    expect(bigReply.error?.code).toBe('tool_failed');
    expect(bigReply.error?.message).toMatch(/the client's reply was \d+ bytes, over the limit of 2048/);
    await bigTurn.close();
  });
});
