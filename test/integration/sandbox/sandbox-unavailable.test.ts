import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HealthCheckResponse_ServingStatus, HealthClient } from '../../../src/gen/grpc/health/v1/health.js';
import { waitFor } from '../../fixtures/process-tree.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { createClient, localTokenOptions, openTurn, textOf } from '../sidecar/turn-driver.js';

// Fails closed: a sidecar asked for the sandbox on a machine that cannot give it (here bwrap is
// named at a path where nothing is, as on a machine without bubblewrap) still starts and serves,
// but runs no command: each call says why and how to fix it, start-up logs it once, and the health
// service reports it. Needs no bubblewrap, so it runs everywhere.
let dir: string;
let sidecar: StartedSidecar;

const healthOf = (address: string, service: string) =>
  new Promise<HealthCheckResponse_ServingStatus | string>((resolve) => {
    const client = new HealthClient(address, grpc.credentials.createInsecure(), localTokenOptions(address));
    client.check({ service }, (error, response) => {
      client.close();
      resolve(error ? `error ${error.code}` : response.status);
    });
  });

describe('the sandbox cannot be had', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-unavailable-'));
    writeFileSync(join(dir, 'notes.txt'), 'hello\n');
    sidecar = await startSidecar({
      args: ['--workspace', dir, '--state-dir', join(dir, '.state'), '--sandbox', 'workspace-write'],
      env: { TOOLS_RUNTIME_BWRAP: join(dir, 'no-such-bwrap') },
    });
  }, 60_000);
  afterAll(async () => {
    await sidecar?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('run_command refuses every call with sandbox_unavailable, naming the cause and the fix; nothing runs', async () => {
    const turn = await openTurn(createClient(sidecar.address), 'agent-unavailable');
    for (const id of ['a', 'b']) {
      const result = await turn.call(id, 'run_command', { command: `touch ran-${id}` });
      expect(result.error?.code).toBe('sandbox_unavailable');
      expect(textOf(result)).toContain('no-such-bwrap');
      expect(textOf(result)).toContain('apt-get install bubblewrap');
      expect(textOf(result)).toContain('--sandbox off');
      expect(existsSync(join(dir, `ran-${id}`))).toBe(false);
    }
    // The tools that start no process still work.
    const read = await turn.call('r', 'read_file', { path: 'notes.txt' });
    expect(textOf(read)).toContain('hello');
    await turn.end();
  });

  it('start-up logs it in one line, and the health service reports the sandbox NOT_SERVING', async () => {
    const line = await waitFor(() => sidecar.stderr().split('\n').find((entry) => entry.includes('sandbox unavailable')), 10_000);
    expect(line).toContain('apt-get install bubblewrap');
    expect(await healthOf(sidecar.address, 'toolruntime.v1.Sandbox')).toBe(HealthCheckResponse_ServingStatus.NOT_SERVING);
    expect(await healthOf(sidecar.address, '')).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });
});

describe('--sandbox off', () => {
  it('runs commands unconfined, says at start-up what that no longer covers, and reports no sandbox to health', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'sandbox-off-'));
    const started = await startSidecar({ args: ['--workspace', folder, '--state-dir', join(folder, '.state'), '--sandbox', 'off'], env: { TOOLS_RUNTIME_BWRAP: join(folder, 'no-such-bwrap') } });
    try {
      const turn = await openTurn(createClient(started.address), 'agent-off');
      const result = await turn.call('a', 'run_command', { command: 'echo ran > ran.txt && cat ran.txt' });
      expect(result.error).toBeUndefined();
      expect(textOf(result)).toContain('ran');
      await turn.end();
      const line = await waitFor(() => started.stderr().split('\n').find((entry) => entry.includes('sandbox off')), 10_000);
      expect(line).toContain('outlive its call');
      expect(await healthOf(started.address, 'toolruntime.v1.Sandbox')).toBe(`error ${grpc.status.NOT_FOUND}`);
    } finally {
      await started.stop();
      rmSync(folder, { recursive: true, force: true });
    }
  }, 60_000);
});
