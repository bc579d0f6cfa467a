import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startSidecar } from '../../fixtures/start-sidecar.js';
import { createClient, openTurn } from '../sidecar/turn-driver.js';

const preload = fileURLToPath(new URL('../../fixtures/telemetry/report-otel-modules.cjs', import.meta.url));

/** Runs a sidecar child through one call and a drain; returns how many OpenTelemetry files it loaded. */
async function otelModulesLoaded(extraArgs: string[]): Promise<number> {
  const workspace = mkdtempSync(join(tmpdir(), 'telemetry-off-'));
  const env: NodeJS.ProcessEnv = { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim() };
  for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) env[name] = '';
  const sidecar = await startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--workspace', workspace, '--state-dir', join(workspace, '.state'), ...extraArgs], env });
  try {
    const client = createClient(sidecar.address);
    const turn = await openTurn(client, 'agent-off');
    expect((await turn.call('n1', 'noop', {})).error).toBeUndefined();
    await turn.end();
    client.close();
  } finally {
    expect(await sidecar.stop()).toBe(0);
  }
  const reports = sidecar
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{"otelModulesLoaded"'))
    .map((line) => (JSON.parse(line) as { otelModulesLoaded: number }).otelModulesLoaded);
  expect(reports.length).toBeGreaterThan(0);
  return Math.max(...reports);
}

describe('telemetry off', () => {
  it('loads no OpenTelemetry module when nothing asks for telemetry, and loads it for --metrics-listen', async () => {
    expect(await otelModulesLoaded([])).toBe(0);
    expect(await otelModulesLoaded(['--metrics-listen', '127.0.0.1:0'])).toBeGreaterThan(0);
  }, 90_000);
});
