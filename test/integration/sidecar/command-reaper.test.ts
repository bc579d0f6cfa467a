import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSidecar } from '../../fixtures/start-sidecar.js';
import { createClient, openTurn, textOf, type TurnDriver } from './turn-driver.js';

// A sidecar that dies hard (SIGKILL: no handler runs) must not leave its commands behind: the
// shell and its background children, each in the command's own process group, die with it.
// These run under --sandbox off: they read host pids, and cover the reaper that is the only net
// there (in the sandbox, its PID namespace kills everything: test/integration/sandbox/).
let dir: string;
const groups: number[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sidecar-reaper-'));
});

afterAll(() => {
  // Whatever a failing run left behind goes now.
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Live (non-zombie) processes whose process group is `group`. */
function membersOf(group: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] !== 'Z' && Number(fields[2]) === group) members.push(Number(entry));
  }
  return members;
}

async function waitFor<T>(check: () => T | undefined, ms: number): Promise<T | undefined> {
  const end = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value !== undefined || Date.now() > end) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const openTrackedGroupTurn = (client: ReturnType<typeof createClient>) => openTurn(client, 'agent-reaper');

/** The reaper supervisors whose parent is in the process group `group` (a sidecar started detached). */
function supervisorsOf(group: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('tools-runtime-reaper')) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const parentStat = readFileSync(`/proc/${parent}/stat`, 'utf8');
      if (Number(parentStat.slice(parentStat.lastIndexOf(')') + 2).split(' ')[2]) === group) found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}

/** Starts `command` through run_command and resolves the process group it printed first. */
async function startCommand(turn: TurnDriver, callId: string, command: string): Promise<number> {
  void turn.call(callId, 'run_command', { command: `echo "pgid=$$"; ${command}`, timeout_ms: 600_000 });
  const group = await waitFor(() => {
    for (const event of turn.record(callId).events) {
      if (event?.$case !== 'presentation') continue;
      const match = /pgid=(\d+)/.exec(event.value.payloadJson);
      if (match) return Number(match[1]);
    }
    return undefined;
  }, 20_000);
  if (group === undefined) throw new Error(`run_command ${callId} printed no process group`);
  groups.push(group);
  // The shell forks its children after the echo: wait until all three run.
  await waitFor(() => (membersOf(group).length >= 3 ? true : undefined), 10_000);
  return group;
}

describe('commands die with their sidecar', () => {
  it('kills a running command group, background children included, when the sidecar is SIGKILLed', async () => {
    const sidecar = await startSidecar({
      entry: 'test/fixtures/fault-sidecar.ts',
      args: ['--workspace', dir, '--state-dir', join(dir, 'state'), '--log-level', 'error', '--sandbox', 'off'],
    });
    const client = createClient(sidecar.address);
    try {
      const turn = await openTurn(client, 'agent-reaper');
      const group = await startCommand(turn, 'long', "sh -c 'sleep 300 & sleep 300; wait'");
      expect(membersOf(group).length).toBeGreaterThanOrEqual(3);
      await sidecar.stop('SIGKILL');
      const left = await waitFor(() => (membersOf(group).length === 0 ? [] : undefined), 15_000);
      expect(left ?? membersOf(group)).toEqual([]);
    } finally {
      client.close();
      await sidecar.stop('SIGKILL');
    }
  });

  it('kills what a finished command left running in the background when the sidecar exits', async () => {
    const sidecar = await startSidecar({
      entry: 'test/fixtures/fault-sidecar.ts',
      args: ['--workspace', dir, '--state-dir', join(dir, 'state'), '--log-level', 'error', '--sandbox', 'off'],
    });
    const client = createClient(sidecar.address);
    try {
      const turn = await openTurn(client, 'agent-reaper');
      const result = await turn.call('daemon', 'run_command', { command: 'echo "pgid=$$"; sleep 300 >/dev/null 2>&1 &' });
      const group = Number(/pgid=(\d+)/.exec(textOf(result))?.[1]);
      expect(group).toBeGreaterThan(1);
      groups.push(group);
      expect(membersOf(group).length).toBe(1);
      expect((await turn.end()).code).toBe(grpc.status.OK);
      expect(await sidecar.stop('SIGTERM')).toBe(0);
      const left = await waitFor(() => (membersOf(group).length === 0 ? [] : undefined), 15_000);
      expect(left ?? membersOf(group)).toEqual([]);
    } finally {
      client.close();
      await sidecar.stop('SIGKILL');
    }
  });

  it('kills what a sidecar left when its supervisor died with it, at the first turn of the next sidecar on that state folder', async () => {
    const stateDir = join(dir, 'state-restart');
    const first = await startSidecar({ entry: 'test/fixtures/fault-sidecar.ts', args: ['--workspace', dir, '--state-dir', stateDir, '--log-level', 'error', '--sandbox', 'off'] });
    const client = createClient(first.address);
    let group: number;
    try {
      const turn = await openTrackedGroupTurn(client);
      group = await startCommand(turn, 'orphan', "sh -c 'sleep 300 & sleep 300; wait'");
      // The supervisor is the sidecar's child running the reaper script: kill it first, then the sidecar.
      const supervisors = supervisorsOf(first.child.pid!);
      expect(supervisors).toHaveLength(1);
      process.kill(supervisors[0]!, 'SIGKILL');
      await first.stop('SIGKILL');
      // Nothing is left to kill them: they survive the sidecar.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(membersOf(group).length).toBeGreaterThanOrEqual(3);
    } finally {
      client.close();
      await first.stop('SIGKILL');
    }
    const second = await startSidecar({ entry: 'test/fixtures/fault-sidecar.ts', args: ['--workspace', dir, '--state-dir', stateDir, '--log-level', 'error', '--sandbox', 'off'] });
    const secondClient = createClient(second.address);
    try {
      const turn = await openTurn(secondClient, 'agent-reaper');
      const left = await waitFor(() => (membersOf(group).length === 0 ? [] : undefined), 15_000);
      expect(left ?? membersOf(group)).toEqual([]);
      expect((await turn.end()).code).toBe(grpc.status.OK);
    } finally {
      secondClient.close();
      expect(await second.stop('SIGTERM')).toBe(0);
    }
  });
});
