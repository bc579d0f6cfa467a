import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import type { ClientRequestEvent } from '../../../controller/sidecar-client/sidecar-types.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const dir = mkdtempSync(join(tmpdir(), 'control-tools-'));
let sidecar: StartedSidecar;
let client: SidecarClient;

beforeAll(async () => {
  sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', dir, '--state-dir', join(dir, '.state')] });
  client = createSidecarClient({ address: sidecar.address });
});
afterAll(async () => {
  client?.close();
  await sidecar?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const signal = () => AbortSignal.timeout(20_000);
const job = (jobId: string, prompt: string) => ({ jobId, agentId: 'agent-c', prompt, state: 1, finalText: '', error: '', createdAt: '2026-11-30T21:00:00.000Z', startedAt: '', finishedAt: '' });

describe('the real sidecar\'s control-plane tools over the Turn stream', () => {
  it('are offered only to a client that declares control_plane, job tools only with can_spawn_jobs', async () => {
    const plain = await client.openTurn({ agentId: 'agent-c', turnId: 'p', canSpawnJobs: true }, { signal: signal() });
    const noJobs = await client.openTurn({ agentId: 'agent-c', turnId: 'n', controlPlane: true }, { signal: signal() });
    const full = await client.openTurn({ agentId: 'agent-c', turnId: 'f', controlPlane: true, canSpawnJobs: true }, { signal: signal() });
    const before = plain.tools.map((tool) => tool.name);
    expect(before.some((name) => /^(schedule|job|workflow)_/.test(name))).toBe(false);
    expect(noJobs.tools.map((tool) => tool.name)).toEqual([...before, 'schedule_create', 'schedule_list', 'schedule_delete', 'workflow_start', 'workflow_show', 'workflow_list', 'workflow_cancel']);
    expect(full.tools.map((tool) => tool.name)).toEqual([
      ...before,
      'schedule_create', 'schedule_list', 'schedule_delete',
      'job_start', 'job_list', 'job_show', 'job_cancel',
      'workflow_start', 'workflow_show', 'workflow_list', 'workflow_cancel',
    ]);
    for (const turn of [plain, noJobs, full]) await turn.close();
  });

  it('job_start reaches the client\'s handler as a typed StartJob and the model reads the job id back', async () => {
    const seen: ClientRequestEvent[] = [];
    const turn = await client.openTurn(
      { agentId: 'agent-c', turnId: 'j', controlPlane: true, canSpawnJobs: true },
      {
        signal: signal(),
        async onClientRequest(request) {
          seen.push(request);
          if (request.kind === 'control' && request.control.request?.$case === 'startJob') {
            return { kind: 'control', control: { reply: { $case: 'startJob', value: { job: job('job-42', request.control.request.value.prompt) } } } };
          }
          return { kind: 'control', control: { reply: { $case: 'error', value: { code: 'not_found', message: 'no such workflow run for this agent' } } } };
        },
      },
    );
    const started = await turn.call({ callId: 'c1', name: 'job_start', argumentsJson: '{"prompt":"Check the build"}' }).result;
    expect(started.error).toBeUndefined();
    expect(started.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('Started job job-42: queued') });
    expect(seen[0]).toMatchObject({ callId: 'c1', kind: 'control', control: { request: { $case: 'startJob', value: { agentId: '', prompt: 'Check the build' } } } });
    const refused = await turn.call({ callId: 'c2', name: 'workflow_show', argumentsJson: '{"run_id":"run-x"}' }).result;
    expect(refused.error).toEqual({ code: 'tool_failed', message: 'workflow_show failed: the control plane refused (not_found): no such workflow run for this agent' });
    await turn.close();
  });
});
