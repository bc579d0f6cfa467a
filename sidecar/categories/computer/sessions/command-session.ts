import type { ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { ToolRuntimeError } from '../../../../src/index.js';
import { HeadTailBuffer } from '../head-tail-buffer.js';
import { adoptProcess, formatBytes, startPrepared, type PreparedCommand, type ProcessGroupReaper, type ProcessHandle } from '../sandbox/index.js';
import { loadPty, type PtyProcess } from './pty-library.js';
import { TerminalScreen } from './terminal-screen.js';

/** How a session's command ended. */
export interface SessionExit {
  exitCode: number | null;
  signal: string | null;
  /** Set when the OOM killer ended it at its agent's memory limit: says so, with the limit. */
  outOfMemory?: string;
}

export interface CommandSessionOptions {
  id: string;
  agentId: string;
  /** The command as the model gave it (for listings). */
  command: string;
  exec: PreparedCommand;
  /** True: a pseudo-terminal of `cols` × `rows`; false: stdin, stdout and stderr are pipes. */
  tty: boolean;
  cols: number;
  rows: number;
  /** Unread output kept, in characters (head and tail; the middle is cut and counted). */
  maxBufferedChars: number;
  /** Between SIGTERM and SIGKILL of the group. */
  killGraceMs: number;
  reaper: ProcessGroupReaper;
  now: () => number;
}

/**
 * One command the agent left running: its process group (a PTY's session, or a detached child with
 * pipes), the output nobody has read yet (head and tail, bounded), and listeners for output as it
 * comes. Output is decoded as UTF-8 by whole characters (the PTY library's decoder, or a
 * StringDecoder for pipes), so a read never splits one. The session ends when its command exits:
 * then whatever the command left running in its group is killed, as run_command does.
 */
export class CommandSession {
  readonly id: string;
  readonly agentId: string;
  readonly command: string;
  readonly tty: boolean;
  readonly startedAt: number;
  /** When a call last named this session (idle limit). */
  lastUsedAt: number;
  pid = 0;
  /** Set once the command exited and its output was drained. */
  exit: SessionExit | undefined;
  /** Resolves once `exit` is set. */
  readonly ended: Promise<void>;
  /**
   * True when the session's process is a sandbox's bwrap (exec'd directly or by nsenter) rather
   * than the command: it then always has the sandbox below it while the command runs.
   */
  readonly wrapped: boolean;

  private buffer: HeadTailBuffer;
  private readonly listeners = new Set<(text: string) => void>();
  private pty: PtyProcess | undefined;
  private child: ChildProcess | undefined;
  // The process group, as the one start function tracks it (reaper, limits, kill, Ctrl-C).
  private handle: ProcessHandle | undefined;
  private screenState: TerminalScreen | undefined;
  private inputClosed = false;
  private killTimer: NodeJS.Timeout | undefined;
  private markEnded!: () => void;
  // Calls that name this session run one after another, in the order they arrived.
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(private readonly options: CommandSessionOptions) {
    this.id = options.id;
    this.agentId = options.agentId;
    this.command = options.command;
    this.tty = options.tty;
    // Sandboxed, the session's process is bubblewrap once its launchers (the limits', nsenter, the
    // seccomp one: each execs the next) are done. Matching the file name missed it whenever a
    // launcher came first, which is the default: the wrapper rules of programState never applied.
    this.wrapped = options.exec.sandboxed;
    this.startedAt = options.now();
    this.lastUsedAt = this.startedAt;
    this.buffer = new HeadTailBuffer(options.maxBufferedChars);
    this.ended = new Promise((resolve) => (this.markEnded = resolve));
  }

  /**
   * Starts the command. Throws `tool_failed` when it cannot be started (the PTY library does not
   * load on this machine, the shell cannot be exec'd).
   */
  static async start(options: CommandSessionOptions): Promise<CommandSession> {
    const session = new CommandSession(options);
    if (options.tty) await session.startPty();
    else session.startPipes();
    return session;
  }

  private async startPty(): Promise<void> {
    const { exec, cols, rows } = this.options;
    const pty = await loadPty();
    this.screenState = await TerminalScreen.create({ cols, rows });
    let term: PtyProcess;
    try {
      // A copy: the library writes PWD and TERM into the environment it is given.
      term = pty.spawn(exec.file, exec.args, { name: 'xterm-256color', cols, rows, cwd: exec.cwd, env: { ...exec.env } });
    } catch (error) {
      this.screenState.dispose();
      this.screenState = undefined;
      throw new ToolRuntimeError('tool_failed', `the command could not be started in a terminal: ${String(error)}`, { cause: error });
    }
    this.pty = term;
    // forkpty makes the child a session leader: its pid is its process group.
    this.pid = term.pid;
    this.handle = adoptProcess(exec, term.pid, this.options.reaper);
    term.onData((text) => this.received(text));
    term.onExit(({ exitCode, signal }) => this.finished({ exitCode: signal ? null : exitCode, signal: signal ? signalName(signal) : null }));
  }

  private startPipes(): void {
    const { exec } = this.options;
    const started = startPrepared(exec, { stdio: ['pipe', 'pipe', 'pipe'], reaper: this.options.reaper });
    const { child } = started;
    if (child.pid === undefined) {
      // spawn reports the failure asynchronously; there is no process to track.
      throw new ToolRuntimeError('tool_failed', `the command could not be started: ${exec.file} did not spawn`);
    }
    this.child = child;
    this.pid = child.pid;
    this.handle = started;
    // A command that closes its stdin early must not crash the sidecar with EPIPE.
    child.stdin!.on('error', () => (this.inputClosed = true));
    let open = 2;
    let exit: SessionExit | undefined;
    let lingerTimer: NodeJS.Timeout | undefined;
    const done = () => {
      if (exit === undefined || open > 0) return;
      clearTimeout(lingerTimer);
      this.finished(exit);
    };
    for (const stream of [child.stdout!, child.stderr!]) {
      const decoder = new StringDecoder('utf8');
      stream.on('data', (chunk: Buffer) => this.received(decoder.write(chunk)));
      stream.on('close', () => {
        const rest = decoder.end();
        if (rest) this.received(rest);
        open -= 1;
        done();
      });
    }
    child.on('error', () => {
      exit ??= { exitCode: null, signal: null };
      open = 0;
      done();
    });
    child.on('exit', (code, signal) => {
      exit = { exitCode: code, signal };
      // Something the command left behind still holds the pipes: the command is done, so its
      // group goes (as with run_command), and the pipes close.
      if (open > 0) {
        lingerTimer = setTimeout(() => {
          this.handle?.killGroup('SIGKILL');
          child.stdout?.destroy();
          child.stderr?.destroy();
        }, 500);
      }
      done();
    });
  }

  private received(text: string): void {
    if (text === '') return;
    this.buffer.append(text);
    this.screenState?.write(text);
    for (const listener of this.listeners) listener(text);
  }

  private finished(exit: SessionExit): void {
    if (this.exit) return;
    clearTimeout(this.killTimer);
    // Whatever the command left running in its group does not outlive it.
    this.handle?.killGroup('SIGKILL');
    const { handle } = this;
    if (handle && (exit.signal === 'SIGKILL' || exit.exitCode === 137) && handle.memoryLimitBytes !== undefined && handle.outOfMemory()) {
      exit = { ...exit, outOfMemory: `killed: out of memory (limit ${formatBytes(handle.memoryLimitBytes)}; this agent's processes share it)` };
    }
    handle?.ended();
    this.exit = exit;
    this.inputClosed = true;
    this.markEnded();
  }

  /** True while the command runs. */
  get running(): boolean {
    return this.exit === undefined;
  }

  /** Unread characters held, and characters cut from the middle of them. */
  get unread(): { chars: number; bytes: number; cutChars: number } {
    const text = this.buffer.toString();
    return { chars: this.buffer.length, bytes: Buffer.byteLength(text), cutChars: this.buffer.droppedChars };
  }

  /** The unread output without taking it (what a read would return, before its cut). */
  peek(): string {
    return this.buffer.toString();
  }

  /** Takes the unread output (head and tail, with a marker where the middle was cut). */
  take(): { text: string; cutChars: number } {
    const taken = { text: this.buffer.toString(), cutChars: this.buffer.droppedChars };
    this.buffer = new HeadTailBuffer(this.options.maxBufferedChars);
    return taken;
  }

  /** Calls `listener` with output as it arrives, until the returned function is called. */
  onOutput(listener: (text: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Sends `text` to the command. Under a PTY everything goes to the terminal (`\u0003` is Ctrl-C,
   * `\u0004` Ctrl-D, by the terminal's own rules). With pipes, `\u0003` sends SIGINT to the
   * command's process group (inside the sandbox: the group of the command bwrap started, never
   * bwrap itself) and `\u0004` closes stdin, so both mean the same to the model in either mode.
   *
   * @throws ToolRuntimeError `session_ended` once the command exited.
   */
  write(text: string): void {
    if (this.exit) throw new ToolRuntimeError('session_ended', `session ${this.id} has ended`);
    if (text === '') return;
    if (this.pty) {
      this.pty.write(text);
      return;
    }
    for (const part of text.split(/([\u0003\u0004])/)) {
      if (part === '\u0003') this.handle?.interrupt('SIGINT');
      else if (part === '\u0004') this.closeInput();
      else if (part !== '' && !this.inputClosed) this.child!.stdin!.write(part);
    }
  }

  private closeInput(): void {
    if (this.inputClosed) return;
    this.inputClosed = true;
    this.child?.stdin?.end();
  }

  /** The terminal's screen as text, one line per row, trailing blanks trimmed. Throws for a pipe session. */
  async screen(): Promise<string> {
    if (!this.screenState) throw new ToolRuntimeError('invalid_arguments', `session ${this.id} has no terminal (it was started without tty: true), so it has no screen; read its output instead`);
    return this.screenState.render();
  }

  /** The terminal's size now; undefined for a pipe session. */
  get size(): { cols: number; rows: number } | undefined {
    return this.pty ? { cols: this.pty.cols, rows: this.pty.rows } : undefined;
  }

  /**
   * Resizes the terminal: the PTY (the kernel sends the foreground group SIGWINCH, and a
   * full-screen program redraws) and the headless screen `screen()` renders, so both agree.
   * The caller bounds the size (session-tools.ts).
   *
   * @throws ToolRuntimeError `invalid_arguments` for a session without a terminal;
   *   `session_ended` once the command exited.
   */
  resize(cols: number, rows: number): void {
    if (!this.pty) throw new ToolRuntimeError('invalid_arguments', `session ${this.id} has no terminal (it was started without tty: true), so it has no size to change`);
    if (this.exit) throw new ToolRuntimeError('session_ended', `session ${this.id} has ended`);
    this.pty.resize(cols, rows);
    this.screenState?.resize(cols, rows);
  }

  /**
   * Kills the whole group: SIGTERM, then SIGKILL after the grace. Resolves once the command ended.
   * Never rejects.
   */
  kill(): Promise<void> {
    if (this.exit) return this.ended;
    this.handle?.killGroup('SIGTERM');
    // The PTY's leader may ignore SIGTERM (a shell); SIGHUP is what a closed terminal sends.
    if (this.pty) this.handle?.killGroup('SIGHUP');
    this.killTimer ??= setTimeout(() => this.handle?.killGroup('SIGKILL'), this.options.killGraceMs);
    return this.ended;
  }

  /** Runs `work` after every earlier call on this session has finished: calls apply in order. */
  serialize<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Releases the terminal emulator (after the session ended and was dropped). */
  dispose(): void {
    this.listeners.clear();
    this.screenState?.dispose();
    this.screenState = undefined;
  }
}

function signalName(signal: number): string {
  const found = Object.entries(constants.signals).find(([, value]) => value === signal);
  return found ? found[0] : `signal ${signal}`;
}
