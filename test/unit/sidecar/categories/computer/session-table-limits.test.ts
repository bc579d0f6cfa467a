import { afterEach, describe, expect, it } from 'vitest';
import { prepareCommand, type ProcessPolicy } from '../../../../../sidecar/categories/computer/sandbox/index.js';
import { SessionTable } from '../../../../../sidecar/categories/computer/sessions/session-table.js';

// The session limits hold against concurrent starts: each start takes its slot before its first
// await. Unsandboxed (`off`): what is counted, not the sandbox, is under test.
const policy: ProcessPolicy = { mode: 'off', network: { mode: 'on' }, workspace: process.cwd(), hide: [], readable: [], agent: 'limits-test' };
const exec = () => prepareCommand({ argv: ['/bin/sh', '-c', 'sleep 30'], cwd: process.cwd(), env: { PATH: process.env.PATH }, policy });
const start = async (table: SessionTable, agentId = 'agent-1') => table.start({ agentId, command: 'sleep 30', exec: await exec(), tty: false, cols: 80, rows: 24 });

let table: SessionTable | undefined;
afterEach(async () => {
  await table?.close();
});

describe('session limits under concurrent starts', () => {
  it('six concurrent starts against a limit of three start three; the others are refused and run nothing', async () => {
    table = new SessionTable({ limits: { maxPerAgent: 3, killGraceMs: 200 } });
    const execs = await Promise.all(Array.from({ length: 6 }, exec));
    const results = await Promise.allSettled(execs.map((prepared) => table!.start({ agentId: 'agent-1', command: 'sleep 30', exec: prepared, tty: false, cols: 80, rows: 24 })));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(3);
    const refused = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
    expect(refused).toHaveLength(3);
    for (const result of refused) expect(result.reason).toMatchObject({ code: 'session_limit_reached' });
    expect(table.runningTotal()).toBe(3);
  });

  it('counts the sidecar-wide limit the same way', async () => {
    table = new SessionTable({ limits: { maxPerAgent: 8, maxTotal: 2, killGraceMs: 200 } });
    const results = await Promise.allSettled(['a', 'b', 'c', 'd'].map((agent) => start(table!, agent)));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(2);
    expect(table.runningTotal()).toBe(2);
  });

  it('kills a session that started while the table closed, instead of leaking it', async () => {
    table = new SessionTable({ limits: { killGraceMs: 200 } });
    const prepared = await exec();
    const starting = table.start({ agentId: 'agent-1', command: 'sleep 30', exec: prepared, tty: false, cols: 80, rows: 24 });
    const closing = table.close();
    await expect(starting).rejects.toMatchObject({ code: 'sidecar_unavailable' });
    await closing;
    expect(table.runningTotal()).toBe(0);
  });
});
