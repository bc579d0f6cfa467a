import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HealthCheckResponse_ServingStatus, HealthClient } from '../../../src/gen/grpc/health/v1/health.js';
import { waitFor } from '../../fixtures/process-tree.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';
import { createClient, localTokenOptions, openTurn, textOf } from '../sidecar/turn-driver.js';

// Issue 32, item 11: one failed probe must not disable commands until a restart. The sidecar starts
// with bwrap named where nothing is yet; bwrap then appears there (as after an install, or once a
// loaded machine answers in time): the sidecar probes again with backoff, health turns SERVING, and
// commands run, with no restart.
const suite = requireSystemTools({ suite: 'sandbox probe retry', tools: [{ name: 'bwrap', executable: '/usr/bin/bwrap' }], aptPackages: ['bubblewrap'] });

let dir: string;
let sidecar: StartedSidecar;

const healthOf = (address: string) =>
  new Promise<HealthCheckResponse_ServingStatus | string>((resolve) => {
    const client = new HealthClient(address, grpc.credentials.createInsecure(), localTokenOptions(address));
    client.check({ service: 'toolruntime.v1.Sandbox' }, (error, response) => {
      client.close();
      resolve(error ? `error ${error.code}` : response.status);
    });
  });

describe('a sandbox probe that failed', suite, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-retry-'));
    writeFileSync(join(dir, 'notes.txt'), 'hello\n');
    sidecar = await startSidecar({
      args: ['--workspace', dir, '--state-dir', join(dir, '.state'), '--sandbox', 'workspace-write'],
      env: { TOOLS_RUNTIME_BWRAP: join(dir, 'bwrap-later') },
    });
  }, 60_000);
  afterAll(async () => {
    await sidecar?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is probed again with backoff: refused while it fails (saying when it retries), then commands run without a restart', async () => {
    const turn = await openTurn(createClient(sidecar.address), 'agent-retry');
    const refused = await turn.call('a', 'run_command', { command: 'echo too-early' });
    expect(refused.error?.code).toBe('sandbox_unavailable');
    expect(textOf(refused)).toMatch(/The sidecar probes again in \d+ s\./);
    const logged = await waitFor(() => sidecar.stderr().split('\n').find((line) => /sandbox unavailable \(retrying in \d+ s: /.test(line)), 10_000);
    expect(logged).toBeDefined();
    expect(await healthOf(sidecar.address)).toBe(HealthCheckResponse_ServingStatus.NOT_SERVING);

    symlinkSync('/usr/bin/bwrap', join(dir, 'bwrap-later'));
    // The backoff is 1 s, 2 s, 4 s ... (capped at 60 s): well within this bound.
    const deadline = Date.now() + 30_000;
    let status = await healthOf(sidecar.address);
    while (status !== HealthCheckResponse_ServingStatus.SERVING && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await healthOf(sidecar.address);
    }
    expect(status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    const ran = await turn.call('b', 'run_command', { command: 'echo ran-after-retry' });
    expect(ran.error).toBeUndefined();
    expect(textOf(ran)).toContain('ran-after-retry');
    expect(sidecar.stderr()).toContain('sandbox ready after a retry');
    await turn.end();
  }, 60_000);
});
