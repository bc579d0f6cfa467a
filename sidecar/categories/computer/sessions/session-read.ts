import { headOf, textResult, truncateMiddle, type AgentToolResult, type ToolExecutionContext } from '../../../../src/index.js';
import type { CommandSession } from './command-session.js';
import type { SessionTable } from './session-table.js';

/** The default and the largest `yield_ms`. */
export const DEFAULT_START_YIELD_MS = 5_000;
export const DEFAULT_WRITE_YIELD_MS = 1_000;
export const MAX_YIELD_MS = 30_000;

/** Output characters one call streams as `command.output` events at most; the result still has head and tail. */
const MAX_STREAMED_CHARS = 1_000_000;
/** How often streamed output is coalesced into one event. */
const FLUSH_INTERVAL_MS = 100;

/** What start_command, write_session and read_session record in their result's details. */
export interface SessionReadDetails {
  sessionId: string;
  running: boolean;
  exitCode: number | null;
  signal: string | null;
  /** Characters cut from the middle of the output returned. */
  cutChars: number;
}

/**
 * Waits up to `yieldMs` (or until the command ends, or `context.signal` aborts) while the
 * session's output streams to this call as `command.output` events (`{ session_id, stream, text }`,
 * coalesced, at most a million characters a call). The wait never ends the session: it belongs to
 * the agent, not to the call. Never rejects.
 */
export async function waitOnSession(session: CommandSession, yieldMs: number, context: ToolExecutionContext): Promise<void> {
  let budget = MAX_STREAMED_CHARS;
  let unsent = '';
  let timer: NodeJS.Timeout | undefined;
  let lastFlush = 0;
  const stream = session.tty ? 'pty' : 'output';
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (unsent === '' || budget <= 0) return;
    lastFlush = performance.now();
    const part = headOf(unsent, budget);
    // A cut (even one short of the budget, to keep a character whole) spends the budget.
    budget = part.length < unsent.length ? 0 : budget - part.length;
    unsent = '';
    void context.emit({
      kind: 'command.output',
      payload: { session_id: session.id, stream, text: budget <= 0 ? `${part}\n[… live output stops here; read_session keeps head and tail …]\n` : part },
    });
  };
  const stop = session.onOutput((text) => {
    if (budget <= 0) return;
    unsent += text;
    // Leading edge: an echo after a quiet spell goes out at once (what an interactive write waits
    // for: bench "sessions", echo round trip); a chatty command's output is coalesced into one
    // event per interval, so the event count stays bounded whatever it prints.
    if (unsent.length > 64 * 1024 || (timer === undefined && performance.now() - lastFlush >= FLUSH_INTERVAL_MS)) flush();
    else timer ??= setTimeout(flush, FLUSH_INTERVAL_MS);
  });
  let wait: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    if (yieldMs > 0 && session.running && !context.signal.aborted) {
      await Promise.race([
        session.ended,
        new Promise<void>((resolve) => {
          wait = setTimeout(resolve, yieldMs);
          onAbort = resolve;
          context.signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    }
  } finally {
    clearTimeout(wait);
    if (onAbort) context.signal.removeEventListener('abort', onAbort);
    stop();
    clearTimeout(timer);
    flush();
  }
}

/** `yield_ms`, or the default, kept a second inside the call's deadline. */
export function boundedYield(requested: number | undefined, fallback: number, context: ToolExecutionContext): number {
  const wanted = Math.min(requested ?? fallback, MAX_YIELD_MS);
  const remaining = context.remainingMs?.();
  return remaining === undefined ? wanted : Math.max(0, Math.min(wanted, remaining - 1_000));
}

/**
 * The result of a read: a status line (still running, with the session id and what to do next;
 * or how it ended), then the output not read before, head and tail within `maxChars`. A session
 * whose command has ended is forgotten once this has delivered its last output.
 */
export function sessionReadResult(options: { session: CommandSession; table: SessionTable; maxChars: number; screen?: string; note?: string }): AgentToolResult {
  const { session, table } = options;
  const taken = session.take();
  const shown = truncateMiddle(taken.text, options.maxChars - 400);
  const cutChars = taken.cutChars + shown.cutChars;
  const seconds = ((Date.now() - session.startedAt) / 1000).toFixed(1);
  const exit = session.exit;
  if (exit) table.drop(session);
  const status = exit
    ? `session ${session.id} ended: ${exit.outOfMemory ?? (exit.exitCode !== null ? `exit code ${exit.exitCode}` : `killed by signal ${exit.signal}`)} (${seconds} s)`
    : `session ${session.id} is still running (${seconds} s, pid ${session.pid}): write_session sends input, read_session reads new output${session.tty ? ' or the screen' : ''}, kill_session stops it`;
  const cut = cutChars > 0 ? `; ${cutChars} characters of output cut from the middle` : '';
  const lines = [`${status}${cut}`];
  if (options.note) lines.push(options.note);
  if (options.screen !== undefined) lines.push('screen:', options.screen);
  else lines.push(shown.text === '' ? '(no new output)' : shown.text);
  const details: SessionReadDetails = { sessionId: session.id, running: exit === undefined, exitCode: exit?.exitCode ?? null, signal: exit?.signal ?? null, cutChars };
  return textResult(lines.join('\n'), { details });
}
