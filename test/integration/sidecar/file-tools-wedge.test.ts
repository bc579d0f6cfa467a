import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { createClient, openTurn, textOf, type TurnDriver } from './turn-driver.js';

// Issue 33: the workspace cannot wedge or inflate the file tools. Four read_file calls on FIFOs
// used to hold all four libuv threads (every agent's calls stopped, and SIGTERM did not end the
// sidecar); a 400 MB file was read whole before its size was checked. Over real gRPC: FIFOs, a
// socket and a huge sparse file get their errors, another agent's calls answer meanwhile, and the
// sidecar still exits on SIGTERM.
let dir: string;
let workspace: string;
let sidecar: StartedSidecar;
let socketServer: Server;
let calls = 0;

describe('file tools that cannot be wedged', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'file-wedge-'));
    workspace = join(dir, 'workspace');
    mkdirSync(workspace);
    for (let index = 0; index < 8; index++) execFileSync('mkfifo', [join(workspace, `fifo-${index}`)]);
    writeFileSync(join(workspace, 'huge.bin'), '');
    truncateSync(join(workspace, 'huge.bin'), 400 * 1024 * 1024); // sparse: 400 MB by its size, no disk
    writeFileSync(join(workspace, 'notes.txt'), 'still answering\n');
    socketServer = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => socketServer.listen(join(workspace, 'app.sock'), resolve));
    sidecar = await startSidecar({ args: ['--workspace', workspace, '--state-dir', join(dir, 'state'), '--log-level', 'error'] });
  }, 60_000);

  afterAll(async () => {
    await sidecar?.stop('SIGKILL');
    await new Promise((resolve) => socketServer?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('refuses FIFOs, a socket and an over-cap file at once, while another agent is served', async () => {
    const attacker: TurnDriver = await openTurn(createClient(sidecar.address), 'agent-wedge');
    const other: TurnDriver = await openTurn(createClient(sidecar.address), 'agent-other');
    const call = (turn: TurnDriver, path: string) => turn.call(`w${++calls}`, 'read_file', { path }, { deadlineMs: 20_000 });
    const fifoReads = Array.from({ length: 8 }, (_, index) => call(attacker, `fifo-${index}`));
    const socketRead = call(attacker, 'app.sock');
    const hugeRead = call(attacker, 'huge.bin');
    const otherRead = await call(other, 'notes.txt');
    expect(otherRead.error).toBeUndefined();
    expect(textOf(otherRead)).toContain('still answering');
    for (const result of await Promise.all(fifoReads)) {
      expect(result.error?.code).toBe('tool_failed');
      expect(textOf(result)).toMatch(/fifo-\d is a FIFO \(named pipe\), not a regular file/);
    }
    const socket = await socketRead;
    expect(socket.error?.code).toBe('tool_failed');
    expect(textOf(socket)).toMatch(/app\.sock is a socket, not a regular file/);
    const huge = await hugeRead;
    expect(huge.error?.code).toBe('tool_failed');
    expect(textOf(huge)).toMatch(/huge\.bin is 419430400 bytes, over the 5242880-byte cap/);
    // edit_file and apply_patch go through the same read: a FIFO is refused there too.
    const edit = await attacker.call(`w${++calls}`, 'edit_file', { path: 'fifo-0', old_string: 'a', new_string: 'b' }, { deadlineMs: 20_000 });
    expect(textOf(edit)).toMatch(/is a FIFO/);
    await attacker.end();
    await other.end();
  }, 60_000);

  it('still exits on SIGTERM after FIFO reads', async () => {
    expect(await sidecar.stop('SIGTERM')).toBe(0);
  }, 60_000);
});
