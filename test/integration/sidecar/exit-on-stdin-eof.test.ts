import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runToExit, type ChildExit } from '../../fixtures/run-to-exit.js';
import { afterAll, describe, expect, it } from 'vitest';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { liveProcesses, waitFor } from '../../fixtures/process-tree.js';
import { createClient, openTurn, textOf, type TurnDriver } from './turn-driver.js';

// `--exit-on-stdin-eof`: the lifeline a spawning process gives its sidecar. Tested on the real
// sidecar entry (through tsx, which passes its stdin on to the node process it starts).
const root = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sidecar-lifeline-'));
const started: StartedSidecar[] = [];
const groups: number[] = [];

afterAll(async () => {
  for (const sidecar of started) await sidecar.stop('SIGKILL');
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

const membersOf = (group: number) => liveProcesses().filter((entry) => entry.group === group);

async function start(args: string[]): Promise<StartedSidecar> {
  const sidecar = await startSidecar({ args: ['--workspace', dir, '--state-dir', join(dir, 'state'), '--sandbox', 'off', ...args], stdin: 'pipe', timeoutMs: 60_000 });
  started.push(sidecar);
  return sidecar;
}

/** Starts a command with a background child through run_command; resolves its process group once all of it runs. */
async function startCommand(turn: TurnDriver, callId: string): Promise<number> {
  void turn.call(callId, 'run_command', { command: `echo "pgid=$$"; sh -c 'sleep 300 & sleep 300; wait'`, timeout_ms: 600_000 });
  const group = await waitFor(() => {
    for (const event of turn.record(callId).events) {
      const match = event?.$case === 'presentation' ? /pgid=(\d+)/.exec(event.value.payloadJson) : null;
      if (match) return Number(match[1]);
    }
    return undefined;
  }, 30_000);
  if (group === undefined) throw new Error(`run_command ${callId} printed no process group`);
  groups.push(group);
  await waitFor(() => (membersOf(group).length >= 3 ? true : undefined), 15_000);
  return group;
}

/** Runs the sidecar entry to its exit with stdin ignored; resolves its exit code and output. */
function runSidecarToExit(args: string[]): Promise<ChildExit> {
  return runToExit(`${root}node_modules/.bin/tsx`, [`${root}sidecar/main.ts`, ...args], { cwd: root });
}

describe('sidecar --exit-on-stdin-eof', () => {
  it('drains and exits 0 when stdin reaches EOF, and its running command group dies with it', async () => {
    const sidecar = await start(['--exit-on-stdin-eof', '--drain-grace-ms', '200']);
    const client = createClient(sidecar.address);
    try {
      const turn = await openTurn(client, 'agent-lifeline');
      const group = await startCommand(turn, 'long');
      expect(membersOf(group).length).toBeGreaterThanOrEqual(3);
      const exited = once(sidecar.child, 'exit');
      sidecar.child.stdin!.end();
      const [code] = (await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve(['still running after 60 s']), 60_000))])) as [unknown];
      expect(code).toBe(0);
      const left = await waitFor(() => (membersOf(group).length === 0 ? [] : undefined), 20_000);
      expect(left ?? membersOf(group)).toEqual([]);
      expect(sidecar.stderr()).toContain('"lifeline":"stdin reached EOF"');
      // The call still got its one result: aborted by the drain after its grace.
      expect(turn.record('long').result?.error?.code).toBe('aborted');
    } finally {
      client.close();
    }
  }, 120_000);

  it('without the flag, EOF on stdin changes nothing: the sidecar serves on, and SIGTERM still drains it', async () => {
    const sidecar = await start([]);
    const client = createClient(sidecar.address);
    try {
      sidecar.child.stdin!.end();
      // A lifeline sidecar is gone within milliseconds of EOF; give this one ample time to (not) go.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(sidecar.child.exitCode).toBeNull();
      const turn = await openTurn(client, 'agent-no-lifeline');
      const result = await turn.call('read', 'run_command', { command: 'echo still-here' });
      expect(textOf(result)).toContain('still-here');
      await turn.end();
    } finally {
      client.close();
    }
    expect(await sidecar.stop('SIGTERM')).toBe(0);
  }, 120_000);

  it('refuses the flag, exit 2 with the reason, when stdin is not a pipe', async () => {
    const { code, stdout, stderr } = await runSidecarToExit(['--workspace', dir, '--state-dir', join(dir, 'state'), '--exit-on-stdin-eof']);
    expect(code).toBe(2);
    expect(stdout).not.toContain('listening');
    expect(stderr).toContain('--exit-on-stdin-eof needs stdin to be a pipe');
    expect(stderr).toContain('/dev/null');
  }, 90_000);

  it('--help names the lifeline and the reverse-request limits, and exits 0', async () => {
    const { code, stdout } = await runSidecarToExit(['--help']);
    expect(code).toBe(0);
    for (const flag of ['--exit-on-stdin-eof', '--max-client-requests-per-call N', '--max-pending-client-requests N', '--max-client-message-bytes N', '--workspace DIR']) {
      expect(stdout).toContain(flag);
    }
  }, 90_000);
});
