import type { CommandSession } from './command-session.js';
import { programState, type ProgramState } from './program-waiting.js';
import type { UntilMatcher } from './until-pattern.js';

/**
 * How long output must stay quiet, once the program has answered, before a call returns.
 * A program answering one input writes it in pieces a few milliseconds apart at most: a REPL's
 * value then its prompt, a shell's output then its prompt, a test runner's line-buffered lines
 * (under a loaded machine, 1 to 5 ms between them). 30 ms is several times that gap, and small
 * against a model's step (seconds): 20 REPL steps pay 0.6 s in all (bench "sessions", Python REPL
 * row). A program that pauses longer between two parts of one answer (a compile that prints
 * "Compiling..." then the result) returns at the first part: `until` names what ends the answer,
 * or the next read takes the rest; nothing is lost.
 */
export const SETTLE_MS = 30;

/**
 * Before the settle time is out, the session's processes are looked at this long after the last
 * output: when all of them sleep (the program reads its input again), it has answered, and the
 * call returns then rather than after the whole 30 ms. The first look is at once (by the time the
 * sidecar has the output, a REPL or `cat` is usually back in `read`): an echo through a PTY `cat`
 * then returns in about the call's own cost (bench "sessions", echo row). Later looks catch a
 * program still on its way back to `read`.
 */
const WAITING_CHECKS_MS = [0, 2, 5, 10, 20];
// (The first entry is taken at once, in setImmediate; the others in timers.)

/**
 * While the command is on its way out (a process of it exited, not yet reaped), quiet waits for the
 * exit, whose code is the better answer, up to this long in all: a zombie the program never reaps
 * must not hold every call.
 */
const ENDING_GRACE_MS = 500;

/**
 * A piece of output this large means the program is streaming (the pipe held a full buffer), not
 * answering one input: the processes are not looked at after it, only the settle time counts. Saves
 * a walk of /proc per piece of a chatty command's output (bench "sessions", chatty row).
 */
const STREAMING_PIECE_CHARS = 4_096;

/**
 * Characters one call waits for at most before it returns (`budget`): ten times what one call
 * streams live (a million, past which nothing streams), a hundred times what a result shows (head
 * and tail of 100,000 by default). Past it, waiting longer only moves the tail the result keeps.
 * Not smaller: a chatty command read in turns would then take a round trip per budget, and each
 * round trip keeps another head and tail of output that was cut anyway (the 100 MB test in
 * command-sessions.test.ts keeps under 2 % of it).
 */
export const OUTPUT_BUDGET_CHARS = 10_000_000;

/** What ended a call's wait on a session. */
export type WaitEnd = 'exit' | 'quiet' | 'until' | 'budget' | 'timeout' | 'aborted';

/** What the wait was asked to watch for. */
export interface WaitOptions {
  /** The longest wait (the call's `yield_ms`, already bounded). */
  yieldMs: number;
  /** The call's `until`: while given, quiet does not end the wait (the model named the end). */
  until?: UntilMatcher;
  /**
   * Output already held that counts as an answer: the unread output for read_session. For
   * write_session nothing earlier counts (a compile's earlier output is not its answer).
   */
  seen?: string;
  /**
   * The input just written to a terminal: the terminal echoes it at once, and that echo is not
   * the program's answer (else `ls\n` in a shell would return on its own echo, before `ls` ran).
   */
  echo?: string;
  settleMs?: number;
  budgetChars?: number;
  /** What the program's processes do now; default: programState(session.pid). */
  state?: () => ProgramState;
}

/** How the wait ended and how long it took. */
export interface WaitOutcome {
  endedBy: WaitEnd;
  waitedMs: number;
  /** The `until` the call gave, as the model wrote it (for the status line). */
  until?: string;
}

/**
 * Waits on `session` until the first of: the command ended (`exit`); the program answered (output
 * other than the input's echo arrived) and then printed nothing for `settleMs` (`quiet`, only
 * without `until`); `until` was seen in the output since the wait began (or in `seen`); that
 * output reached `budgetChars` (`budget`); `yieldMs` passed (`timeout`); `signal` aborted
 * (`aborted`). With no answer at all it waits the whole `yieldMs`: a program that answers after a
 * pause (a compile) is not cut short. Never rejects; leaves the session running.
 */
export function waitForAnswer(session: CommandSession, options: WaitOptions, signal: AbortSignal): Promise<WaitOutcome> {
  const started = performance.now();
  const settleMs = options.settleMs ?? SETTLE_MS;
  const budget = options.budgetChars ?? OUTPUT_BUDGET_CHARS;
  const until = options.until;
  const outcome = (endedBy: WaitEnd): WaitOutcome => ({ endedBy, waitedMs: Math.round(performance.now() - started), ...(until ? { until: until.description } : {}) });
  const seen = options.seen ?? '';
  if (!session.running) return Promise.resolve(outcome('exit'));
  if (seen !== '' && until?.feed(seen)) return Promise.resolve(outcome('until'));
  if (signal.aborted) return Promise.resolve(outcome('aborted'));
  if (options.yieldMs <= 0) return Promise.resolve(outcome('timeout'));

  const state = options.state ?? (() => programState(session.pid, { wrapper: session.wrapped }));
  return new Promise<WaitOutcome>((resolve) => {
    let received = 0;
    const echo = options.echo ?? '';
    let sinceWrite = '';
    let answered = seen !== '';
    let quietTimer: NodeJS.Timeout | undefined;
    let checkTimer: NodeJS.Timeout | undefined;
    let confirm: NodeJS.Immediate | undefined;
    let done = false;
    const finish = (endedBy: WaitEnd) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      clearTimeout(quietTimer);
      clearTimeout(checkTimer);
      clearImmediate(confirm);
      stop();
      signal.removeEventListener('abort', onAbort);
      resolve(outcome(endedBy));
    };
    let endingSince: number | undefined;
    const settled = () => {
      const now = performance.now();
      if (state() === 'ending' && now - (endingSince ??= now) < ENDING_GRACE_MS) {
        quietTimer = setTimeout(settled, settleMs);
        return;
      }
      finish('quiet');
    };
    const armQuiet = (pieceChars: number) => {
      if (until) return;
      clearTimeout(quietTimer);
      clearTimeout(checkTimer);
      clearImmediate(confirm);
      quietTimer = setTimeout(settled, settleMs);
      if (pieceChars >= STREAMING_PIECE_CHARS) return;
      const lastOutput = performance.now();
      let step = 0;
      const check = () => {
        if (state() === 'waiting') {
          // Timers run before the loop polls for I/O: output the program wrote before it went to
          // sleep (or that it is blocked writing, the pipe full) may still wait in the pipe. Decide
          // after the next poll; output read there re-arms all this and cancels it.
          confirm = setImmediate(() => finish('quiet'));
          return;
        }
        step += 1;
        const next = WAITING_CHECKS_MS[step];
        if (next !== undefined && next < settleMs) checkTimer = setTimeout(check, Math.max(0, next - (performance.now() - lastOutput)));
      };
      // The first look right after this poll of the loop (a timer of 0 ms waits a millisecond).
      confirm = setImmediate(check);
    };
    const onAbort = () => finish('aborted');
    const deadline = setTimeout(() => finish('timeout'), options.yieldMs);
    const stop = session.onOutput((text) => {
      received += text.length;
      if (until?.feed(text)) return finish('until');
      if (received >= budget) return finish('budget');
      if (!answered) {
        sinceWrite += text;
        // All of it so far is the terminal echoing the input back: no answer yet.
        if (echo !== '' && sinceWrite.length <= echo.length * 4 + 256 && isEchoOf(sinceWrite, echo)) return;
        answered = true;
      }
      armQuiet(text.length);
    });
    signal.addEventListener('abort', onAbort, { once: true });
    void session.ended.then(() => finish('exit'));
    if (answered) armQuiet(0);
  });
}

/** Escape sequences a line editor writes around its echo (cursor moves, modes such as bracketed paste), and carriage returns. */
const DECORATION = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r/g;

/** Whether `output` is (the start of) the terminal's echo of `input`, decorations aside. */
function isEchoOf(output: string, input: string): boolean {
  return input.replace(DECORATION, '').startsWith(output.replace(DECORATION, ''));
}

/**
 * What a terminal echoes for `input` typed into it: the line discipline turns Enter (`\n` or `\r`)
 * into `\r\n` (compared without the `\r`). Control characters echo as `^C` and the like, which
 * then counts as an answer.
 */
export function terminalEcho(input: string): string {
  return input.replace(/\r\n|\r/g, '\n');
}

/** The status line's words for how a wait ended (empty for `exit`: the status says it). */
export function describeWait(wait: WaitOutcome, yieldMs: number): string {
  switch (wait.endedBy) {
    case 'exit':
      return '';
    case 'quiet':
      return `returned after ${wait.waitedMs} ms: the output went quiet`;
    case 'until':
      return `returned after ${wait.waitedMs} ms: ${wait.until} appeared`;
    case 'budget':
      return `returned after ${wait.waitedMs} ms: ${OUTPUT_BUDGET_CHARS} characters arrived (read_session for more)`;
    case 'aborted':
      return 'returned early: the call was cancelled';
    case 'timeout':
      return yieldMs === 0 ? '' : `returned at yield_ms (${yieldMs} ms)${wait.until ? ` without seeing ${wait.until}` : ''}`;
  }
}
