import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processIsRunning } from '../../../src/process-liveness.js';

describe('processIsRunning', () => {
  it('is true for a running process and this one, false once it exited', async () => {
    expect(processIsRunning(process.pid)).toBe(true);
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    const pid = child.pid!;
    expect(processIsRunning(pid)).toBe(true);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect(processIsRunning(pid)).toBe(false);
  });

  it('is false for a zombie: killed, but not yet reaped by its parent', async () => {
    // The shell stays blocked in `sleep` and never reaps its killed child, which stays a zombie.
    const parent = spawn('/bin/sh', ['-c', 'sleep 30 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = await new Promise<number>((resolve) => parent.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))));
      expect(processIsRunning(pid)).toBe(true);
      process.kill(pid, 'SIGKILL');
      let state = '';
      for (let i = 0; i < 200 && state !== 'Z'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        state = (await import('node:fs')).readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.slice(0, 1);
      }
      expect(state).toBe('Z');
      expect(processIsRunning(pid)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('is false for a pid that does not exist', () => {
    expect(processIsRunning(2 ** 22 + 12345)).toBe(false);
  });
});
