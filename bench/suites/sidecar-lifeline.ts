// How long a built sidecar takes to go once its spawner's lifeline closes (--exit-on-stdin-eof),
// beside the same sidecar stopped by SIGTERM, interleaved in the same run. Part of the startup suite.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { SIDECAR_NODE_FLAGS } from '../../controller/sidecar-client/spawn-sidecar.js';
import { quantile, type BenchRow } from '../bench-row.js';

const ROUNDS = 9;

/** Starts the built sidecar with its stdin a pipe this process holds; resolves at its listening line. */
async function startSidecar(script: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...SIDECAR_NODE_FLAGS, script, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not listen within 30 s`)), 30_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('"listening"')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before listening`)));
  });
  return child;
}

/** Ms from `end(child)` to the child's exit; SIGKILL after 30 s (then the row shows it). */
async function timeToExit(child: ChildProcess, end: (child: ChildProcess) => void): Promise<number> {
  const exited = once(child, 'exit');
  const began = performance.now();
  end(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
  return performance.now() - began;
}

/**
 * Rows: an idle built sidecar from SIGTERM to exit (the reference), and from its stdin lifeline
 * closing (what the kernel does when the spawner dies, SIGKILL included) to exit.
 */
export async function measureSidecarLifeline(options: { script: string; sidecarArgs: string[] }): Promise<BenchRow[]> {
  const sigterm: number[] = [];
  const lifeline: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const plain = await startSidecar(options.script, options.sidecarArgs);
    sigterm.push(await timeToExit(plain, (child) => child.kill('SIGTERM')));
    const held = await startSidecar(options.script, [...options.sidecarArgs, '--exit-on-stdin-eof']);
    lifeline.push(await timeToExit(held, (child) => child.stdin!.destroy()));
  }
  const term = quantile(sigterm, 0.5);
  const eof = quantile(lifeline, 0.5);
  const suite = 'startup';
  return [
    { suite, name: 'built sidecar, idle: SIGTERM to exit', value: term, unit: 'ms p50', note: `${ROUNDS} rounds, interleaved` },
    {
      suite,
      name: 'built sidecar, idle: lifeline closed to exit',
      value: eof,
      unit: 'ms p50',
      reference: 'SIGTERM to exit',
      ratio: eof / term,
      note: '--exit-on-stdin-eof; what a SIGKILLed spawner causes',
    },
  ];
}
