import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import type { ClientRequestEvent, ClientRequestHandler } from '../../../controller/sidecar-client/sidecar-types.js';
import { ToolSidecarServiceClient, TurnKind, type ToolResult, type TurnResponse } from '../../../src/gen/toolruntime/v1/sidecar.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { localTokenOptions } from '../sidecar/turn-driver.js';

const dir = mkdtempSync(join(tmpdir(), 'reverse-requests-'));
let sidecar: StartedSidecar;
let client: SidecarClient;

beforeAll(async () => {
  sidecar = await startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--listen', '127.0.0.1:0', '--workspace', dir, '--state-dir', join(dir, 'state')] });
  client = createSidecarClient({ address: sidecar.address });
});
afterAll(async () => {
  client?.close();
  await sidecar?.stop();
});

const signal = () => AbortSignal.timeout(20_000);
const text = (result: { content: Array<{ type: string; text?: string }> }) => result.content.map((part) => part.text ?? '').join('');

/** A handler that answers ShowJob with a job named after the request, recording what it was asked. */
function recordingHandler() {
  const seen: ClientRequestEvent[] = [];
  const handler: ClientRequestHandler = async (request) => {
    seen.push(request);
    if (request.kind !== 'control' || request.control.request?.$case !== 'showJob') throw new Error('unexpected request');
    const jobId = request.control.request.value.jobId;
    return { kind: 'control', control: { reply: { $case: 'showJob', value: { job: { jobId, agentId: 'agent-r', prompt: `prompt of ${jobId}`, state: 2, finalText: '', error: '', createdAt: '', startedAt: '', finishedAt: '' } } } } };
  };
  return { seen, handler };
}

/** A handler that never answers by itself: it waits for its signal and records that it fired. */
function silentHandler() {
  const aborted: string[] = [];
  const asked: string[] = [];
  const handler: ClientRequestHandler = (request, handlerSignal) =>
    new Promise((_resolve, reject) => {
      asked.push(request.requestId);
      handlerSignal.addEventListener('abort', () => {
        aborted.push(request.requestId);
        reject(handlerSignal.reason);
      });
    });
  return { aborted, asked, handler };
}

const until = async (check: () => boolean) => {
  const deadline = Date.now() + 15_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met within 15 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('reverse requests over the Turn stream', () => {
  it('a client without control_plane gets the tool set of before: no control tools, no requests', async () => {
    const plain = await client.openTurn({ agentId: 'agent-r', turnId: 'plain' }, { signal: signal() });
    const withControl = await client.openTurn({ agentId: 'agent-r', turnId: 'ctl', controlPlane: true }, { signal: signal() });
    const plainNames = plain.tools.map((tool) => tool.name);
    expect(plainNames).not.toContain('control_probe');
    expect(withControl.tools.map((tool) => tool.name)).toEqual([...plainNames, 'control_probe']);
    const unknown = await plain.call({ callId: 'c1', name: 'control_probe', argumentsJson: '{"job_id":"j"}' }).result;
    expect(unknown.error?.code).toBe('unknown_tool');
    await plain.close();
    await withControl.close();
  });

  it('a tool sends a typed control request tagged with its call; the client answers it as the turn goes on', async () => {
    const { seen, handler } = recordingHandler();
    const turn = await client.openTurn({ agentId: 'agent-r', turnId: 't1', controlPlane: true }, { signal: signal(), onClientRequest: handler });
    const [first, second] = await Promise.all([
      turn.call({ callId: 'p1', name: 'control_probe', argumentsJson: '{"job_id":"job-1","times":2}' }).result,
      turn.call({ callId: 'p2', name: 'control_probe', argumentsJson: '{"job_id":"job-2"}' }).result,
    ]);
    expect(first.error).toBeUndefined();
    expect(JSON.parse(text(first))).toEqual([
      { showJob: { job: expect.objectContaining({ jobId: 'job-1', prompt: 'prompt of job-1' }) } },
      { showJob: { job: expect.objectContaining({ jobId: 'job-1' }) } },
    ]);
    expect(JSON.parse(text(second))[0].showJob.job.jobId).toBe('job-2');
    expect(seen.map((request) => request.callId).sort()).toEqual(['p1', 'p1', 'p2']);
    // The sidecar leaves agent_id empty: the controller fills in the turn's agent.
    expect(seen.every((request) => request.kind === 'control' && request.control.request?.value.agentId === '')).toBe(true);
    expect(new Set(seen.map((request) => request.requestId)).size).toBe(3);
    await turn.close();
  });

  it('without a handler a control request is answered "unavailable" at once, so the call never hangs', async () => {
    const turn = await client.openTurn({ agentId: 'agent-r', turnId: 't2', controlPlane: true }, { signal: signal() });
    const result = await turn.call({ callId: 'p1', name: 'control_probe', argumentsJson: '{"job_id":"j"}' }).result;
    expect(JSON.parse(text(result))).toEqual([{ error: { code: 'unavailable', message: expect.stringContaining('does not answer control-plane requests') } }]);
    await turn.close();
  });

  it('a request never answered ends with the call deadline: one timeout result, and the handler is told', async () => {
    const { aborted, asked, handler } = silentHandler();
    const turn = await client.openTurn({ agentId: 'agent-r', turnId: 't3', controlPlane: true }, { signal: signal(), onClientRequest: handler });
    const result = await turn.call({ callId: 'p1', name: 'control_probe', argumentsJson: '{"job_id":"j"}', deadlineMs: 500 }).result;
    expect(result.error?.code).toBe('timeout');
    expect(asked).toHaveLength(1);
    await until(() => aborted.length === 1);
    // The stream is still usable.
    expect((await turn.call({ callId: 'n1', name: 'noop', argumentsJson: '{}' }).result).content).toEqual([{ type: 'text', text: 'ok' }]);
    await turn.close();
  });

  it('a call cancelled while its request waits gets its aborted result', async () => {
    const { aborted, asked, handler } = silentHandler();
    const turn = await client.openTurn({ agentId: 'agent-r', turnId: 't4', controlPlane: true }, { signal: signal(), onClientRequest: handler });
    const cancel = new AbortController();
    const call = turn.call({ callId: 'p1', name: 'control_probe', argumentsJson: '{"job_id":"j"}' }, { signal: cancel.signal });
    await until(() => asked.length === 1);
    cancel.abort();
    expect((await call.result).error?.code).toBe('aborted');
    await until(() => aborted.length === 1);
    await turn.close();
  });

  it('a call past the per-call request limit fails with a message, not a hang', async () => {
    const { handler } = recordingHandler();
    const turn = await client.openTurn({ agentId: 'agent-r', turnId: 't5', controlPlane: true }, { signal: signal(), onClientRequest: handler });
    const result = await turn.call({ callId: 'p1', name: 'control_probe', argumentsJson: '{"job_id":"j","times":40}' }).result;
    expect(result.error?.code).toBe('tool_failed');
    expect(result.error?.message).toContain('already asked the client 32 times');
    await turn.close();
  });

  it('an oversized reply fails the request instead of reaching the tool', async () => {
    const turn = await client.openTurn(
      { agentId: 'agent-r', turnId: 't6', controlPlane: true },
      {
        signal: signal(),
        onClientRequest: async () => ({ kind: 'control', control: { reply: { $case: 'error', value: { code: 'internal', message: 'x'.repeat(1_100_000) } } } }),
      },
    );
    const result = await turn.call({ callId: 'p1', name: 'control_probe', argumentsJson: '{"job_id":"j"}' }).result;
    expect(result.error?.code).toBe('tool_failed');
    expect(result.error?.message).toMatch(/reply was \d+ bytes, over the limit of 1048576/);
    await turn.close();
  });
});

describe('reverse requests on the raw stream', () => {
  it('ignores replies with unknown or already answered request ids', async () => {
    const raw = new ToolSidecarServiceClient(sidecar.address, grpc.credentials.createInsecure(), localTokenOptions(sidecar.address));
    const stream = raw.turn();
    const responses: TurnResponse[] = [];
    let onResponse = () => {};
    stream.on('data', (response: TurnResponse) => {
      responses.push(response);
      onResponse();
    });
    stream.on('error', () => {});
    const next = (match: (response: TurnResponse) => boolean) =>
      new Promise<TurnResponse>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no matching response within 15 s')), 15_000);
        const check = () => {
          const found = responses.find(match);
          if (found) {
            clearTimeout(timer);
            resolve(found);
          }
        };
        onResponse = check;
        check();
      });
    const showJob = (jobId: string) => ({ reply: { $case: 'showJob' as const, value: { job: { jobId, agentId: '', prompt: '', state: 0, finalText: '', error: '', createdAt: '', startedAt: '', finishedAt: '' } } } });
    try {
      stream.write({
        request: {
          $case: 'open',
          value: { context: { agentId: 'agent-raw', turnId: 'raw', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: true, approvalPolicy: undefined, sandbox: undefined } },
        },
      });
      await next((response) => response.event?.$case === 'toolSet');
      stream.write({ request: { $case: 'call', value: { callId: 'p1', name: 'control_probe', namespace: '', argumentsJson: '{"job_id":"j","times":2}', deadlineMs: 0, traceparent: '', tracestate: '' } } });
      const first = await next((response) => response.event?.$case === 'clientRequest');
      expect(first.callId).toBe('p1');
      const firstId = first.event?.$case === 'clientRequest' ? first.event.value.requestId : '';
      stream.write({ request: { $case: 'reply', value: { requestId: 'no-such-request', reply: { $case: 'control', value: showJob('wrong') } } } });
      stream.write({ request: { $case: 'reply', value: { requestId: firstId, reply: { $case: 'control', value: showJob('first') } } } });
      // The same id again, while the second request waits: ignored, not taken as its answer.
      stream.write({ request: { $case: 'reply', value: { requestId: firstId, reply: { $case: 'control', value: showJob('again') } } } });
      const second = await next((response) => response.event?.$case === 'clientRequest' && response.event.value.requestId !== firstId);
      const secondId = second.event?.$case === 'clientRequest' ? second.event.value.requestId : '';
      stream.write({ request: { $case: 'reply', value: { requestId: secondId, reply: { $case: 'control', value: showJob('second') } } } });
      const result = await next((response) => response.event?.$case === 'result');
      const value = (result.event?.$case === 'result' ? result.event.value : undefined) as ToolResult;
      const body = value.content[0]?.part?.$case === 'text' ? value.content[0].part.value : '';
      expect(JSON.parse(body).map((reply: { showJob: { job: { jobId: string } } }) => reply.showJob.job.jobId)).toEqual(['first', 'second']);
      expect(responses.filter((response) => response.event?.$case === 'clientRequest')).toHaveLength(2);
    } finally {
      stream.end();
      stream.cancel();
      raw.close();
    }
  });
});
