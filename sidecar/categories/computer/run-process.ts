import { StringDecoder } from 'node:string_decoder';
import { headOf } from '../../../src/index.js';
import { HeadTailBuffer } from './head-tail-buffer.js';
import { startProcess, type ProcessGroupReaper, type ProcessPolicy } from './sandbox/index.js';

/** How a process ended. */
export interface ProcessOutcome {
  exitCode: number | null;
  /** The signal that ended the shell, if one did. */
  signal: NodeJS.Signals | null;
  /** True when `signal` fired before the process ended (the group was killed). */
  killed: boolean;
  /**
   * Set when the kernel's OOM killer ended it at its agent's memory limit (`limitBytes`): it died
   * of SIGKILL (status 137 behind bubblewrap) and its group counted an OOM kill meanwhile.
   */
  outOfMemory?: { limitBytes: number };
  /** stdout and stderr interleaved as they arrived, head and tail kept, middle cut with a marker. */
  output: string;
  /** Characters cut from the middle of `output`. */
  cutChars: number;
  durationMs: number;
}

export interface RunProcessOptions {
  command: string;
  /** The sandbox and the limits it runs under (see startProcess). */
  policy: ProcessPolicy;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Kills the whole process group: SIGTERM, then SIGKILL after `killGraceMs`. */
  signal: AbortSignal;
  /** Called with coalesced output while the command runs. */
  onOutput?: (stream: 'stdout' | 'stderr', text: string) => void;
  /** Characters of output kept for the result (head and tail). Default 200,000. */
  maxOutputChars?: number;
  /** Default 2,000 ms. */
  killGraceMs?: number;
  /** How often coalesced output is flushed to `onOutput`. Default 100 ms. */
  flushIntervalMs?: number;
  /** Output characters handed to `onOutput` at most; the rest is only counted. Default 1,000,000. */
  maxStreamedChars?: number;
  /** Ties the command's group to the sidecar's life. Default: the process's shared reaper. */
  reaper?: ProcessGroupReaper;
}

/**
 * Runs `/bin/sh -c command` in its own process group (spawned detached), stdin closed. Output is
 * kept head and tail (memory bounded) and streamed, coalesced, to `onOutput`. When `signal` fires,
 * the whole group (grandchildren too) gets SIGTERM, and SIGKILL after the grace period if anything
 * in it is still alive; the promise settles once the shell has exited. Background processes that
 * keep the output pipes open after the shell exits are killed after a short wait. The group is
 * tracked by a reaper (a supervisor outside the sidecar's process group), so it dies with the
 * sidecar even when the sidecar is SIGKILLed and no abort handler runs.
 * Sandboxed (`options.policy`), the group is bubblewrap's: everything the command started lives in
 * the sandbox's PID namespace and dies with it, at once, when the command ends or is killed.
 * Never rejects for the command's own failure: a non-zero exit is an outcome.
 *
 * @throws ToolRuntimeError `sandbox_unavailable` (rejects) when the policy needs a sandbox this
 *   machine cannot give: nothing ran.
 */
export async function runProcess(options: RunProcessOptions): Promise<ProcessOutcome> {
  const started = performance.now();
  const buffer = new HeadTailBuffer(options.maxOutputChars ?? 200_000);
  const flushInterval = options.flushIntervalMs ?? 100;
  let streamBudget = options.maxStreamedChars ?? 1_000_000;
  const unsent: Record<'stdout' | 'stderr', string> = { stdout: '', stderr: '' };
  let flushTimer: NodeJS.Timeout | undefined;

  const flush = () => {
    flushTimer = undefined;
    for (const stream of ['stdout', 'stderr'] as const) {
      const text = unsent[stream];
      unsent[stream] = '';
      if (text === '' || streamBudget <= 0 || !options.onOutput) continue;
      const part = headOf(text, streamBudget);
      // A cut (even one short of the budget, to keep a character whole) spends the budget.
      streamBudget = part.length < text.length ? 0 : streamBudget - part.length;
      options.onOutput(stream, streamBudget <= 0 ? `${part}\n[… live output stops here; the result keeps head and tail …]\n` : part);
    }
  };

  const proc = await startProcess({
    argv: ['/bin/sh', '-c', options.command],
    cwd: options.cwd,
    env: options.env,
    policy: options.policy,
    ...(options.reaper ? { reaper: options.reaper } : {}),
  });
  const { child, pid } = proc;
  const killGroup = (_pid: number, signal: NodeJS.Signals) => proc.killGroup(signal);
  const diedOfMemory = (exit: { code: number | null; signal: NodeJS.Signals | null }) =>
    proc.memoryLimitBytes !== undefined && (exit.signal === 'SIGKILL' || exit.code === 137) && proc.outOfMemory();
  return new Promise<ProcessOutcome>((resolve, reject) => {
    let killed = false;
    let killTimer: NodeJS.Timeout | undefined;
    let lingerTimer: NodeJS.Timeout | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let openStreams = 2;

    const onAbort = () => {
      if (pid === undefined || exit !== undefined) return;
      killed = true;
      killGroup(pid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(pid, 'SIGKILL'), options.killGraceMs ?? 2_000);
    };

    const finish = () => {
      if (exit === undefined || openStreams > 0) return;
      clearTimeout(killTimer);
      clearTimeout(lingerTimer);
      clearTimeout(flushTimer);
      options.signal.removeEventListener('abort', onAbort);
      flush();
      // A group member that ignored SIGTERM must not outlive the call.
      if (killed && pid !== undefined) killGroup(pid, 'SIGKILL');
      resolve({
        exitCode: exit.code,
        signal: exit.signal,
        killed,
        ...(diedOfMemory(exit) ? { outOfMemory: { limitBytes: proc.memoryLimitBytes! } } : {}),
        output: buffer.toString(),
        cutChars: buffer.droppedChars,
        durationMs: performance.now() - started,
      });
    };

    for (const stream of ['stdout', 'stderr'] as const) {
      const decoder = new StringDecoder('utf8');
      const source = child[stream]!;
      source.on('data', (chunk: Buffer) => {
        const text = decoder.write(chunk);
        buffer.append(text);
        unsent[stream] += text;
        if (unsent[stream].length > 64 * 1024) flush();
        else flushTimer ??= setTimeout(flush, flushInterval);
      });
      source.on('close', () => {
        const rest = decoder.end();
        if (rest) {
          buffer.append(rest);
          unsent[stream] += rest;
        }
        openStreams -= 1;
        finish();
      });
    }

    child.on('error', (error) => {
      options.signal.removeEventListener('abort', onAbort);
      clearTimeout(flushTimer);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      if (openStreams > 0) {
        // Something in the group still holds the pipes: the shell is done, so end the group.
        lingerTimer = setTimeout(() => {
          if (pid !== undefined) killGroup(pid, killed ? 'SIGKILL' : 'SIGTERM');
          lingerTimer = setTimeout(() => {
            if (pid !== undefined) killGroup(pid, 'SIGKILL');
            child.stdout?.destroy();
            child.stderr?.destroy();
          }, options.killGraceMs ?? 2_000);
        }, killed ? 0 : 500);
      }
      finish();
    });

    if (options.signal.aborted) onAbort();
    else options.signal.addEventListener('abort', onAbort, { once: true });
  });
}
