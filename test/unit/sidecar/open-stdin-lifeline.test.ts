import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStdinLifeline } from '../../../sidecar/open-stdin-lifeline.js';

const dir = mkdtempSync(join(tmpdir(), 'stdin-lifeline-'));
const fds: number[] = [];
afterAll(() => {
  for (const fd of fds) closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
});

/** A stand-in for process.stdin: only its fd is read before `watch`. */
const stdinOn = (fd: number) => ({ fd }) as unknown as NodeJS.ReadStream;

describe('openStdinLifeline', () => {
  it('refuses a stdin that can never tell the spawner died, saying what it is', () => {
    const file = join(dir, 'input.txt');
    writeFileSync(file, 'x');
    const fileFd = openSync(file, 'r');
    const nullFd = openSync('/dev/null', 'r');
    fds.push(fileFd, nullFd);
    expect(() => openStdinLifeline({ stdin: stdinOn(fileFd), outputs: [] })).toThrow('needs stdin to be a pipe whose write end only the spawning process holds, but it is a regular file');
    expect(() => openStdinLifeline({ stdin: stdinOn(nullFd), outputs: [] })).toThrow('but it is a character device (a terminal, or /dev/null when stdin is ignored)');
  });

  it('refuses a stdin that is not open', () => {
    expect(() => openStdinLifeline({ stdin: stdinOn(987_654), outputs: [] })).toThrow('--exit-on-stdin-eof: stdin (fd 987654) is not open: EBADF');
  });
});
