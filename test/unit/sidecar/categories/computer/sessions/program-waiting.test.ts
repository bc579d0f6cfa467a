import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { programState } from '../../../../../../sidecar/categories/computer/sessions/program-waiting.js';

// Real process trees shaped as a sandboxed session's: a wrapper (bwrap) over the sandbox's init over
// the command. Here sh stands in for both wrappers, sleep for the command.
const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

function start(script: string): ChildProcess {
  const child = spawn('sh', ['-c', script], { stdio: 'ignore', detached: true });
  started.push(child);
  return child;
}

/** Waits (bounded) until `pid`'s tree is `depth` processes deep and every process sleeps. */
async function settledTree(pid: number, depth: number): Promise<void> {
  for (let waited = 0; waited < 5_000; waited += 20) {
    let current = pid;
    let found = 1;
    for (;;) {
      const children = readFileSync(`/proc/${current}/task/${current}/children`, 'latin1').trim();
      if (children === '') break;
      current = Number(children.split(' ')[0]);
      found += 1;
    }
    if (found === depth && programState(pid) === 'waiting') return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`process ${pid} did not settle into a tree ${depth} deep`);
}

describe('programState', () => {
  it('a wrapper whose init still has its command below it is waiting', async () => {
    const wrapper = start('sh -c "sleep 30; true"; true');
    await settledTree(wrapper.pid!, 3);
    expect(programState(wrapper.pid!, { wrapper: true })).toBe('waiting');
  });

  it("a wrapper whose init has no command left is ending, even while the init sleeps", async () => {
    // wrapper -> init (sleeping, no child): the command was reaped and the init is on its way out.
    const wrapper = start('sleep 30; true');
    await settledTree(wrapper.pid!, 2);
    expect(programState(wrapper.pid!, { wrapper: true })).toBe('ending');
    // Without a wrapper the same tree is a program waiting (sh waiting on its sleep).
    expect(programState(wrapper.pid!)).toBe('waiting');
  });

  it('a wrapper with no child at all is ending; a process that is gone is ending', async () => {
    const lone = start('exec sleep 30');
    await settledTree(lone.pid!, 1);
    expect(programState(lone.pid!, { wrapper: true })).toBe('ending');
    expect(programState(lone.pid!)).toBe('waiting');
    expect(programState(2 ** 22 + 7)).toBe('ending');
  });
});
