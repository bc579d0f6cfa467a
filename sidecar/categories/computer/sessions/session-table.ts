import { ToolRuntimeError } from '../../../../src/index.js';
import { sharedProcessGroupReaper, type PreparedCommand, type ProcessGroupReaper } from '../sandbox/index.js';
import { CommandSession } from './command-session.js';

/** Bounds on what command sessions may hold. */
export interface SessionLimits {
  /** Running sessions one agent may have; one more is refused with the list. */
  maxPerAgent: number;
  /** Running sessions of all agents together. */
  maxTotal: number;
  /** A session no call named for this long is killed (and an ended one forgotten). */
  idleMs: number;
  /** Unread output kept per session, in characters (head and tail). */
  maxBufferedChars: number;
  /** Largest input one write may send, in UTF-8 bytes. */
  maxInputBytes: number;
  /** Between SIGTERM and SIGKILL when a session is killed. */
  killGraceMs: number;
}

export const defaultSessionLimits: SessionLimits = {
  maxPerAgent: 8,
  maxTotal: 64,
  idleMs: 30 * 60_000,
  maxBufferedChars: 100_000,
  maxInputBytes: 64 * 1024,
  killGraceMs: 2_000,
};

/** One line of a listing: what the model sees of a session. */
export interface SessionInfo {
  sessionId: string;
  command: string;
  tty: boolean;
  state: 'running' | 'exited';
  exitCode: number | null;
  signal: string | null;
  ageMs: number;
  idleMs: number;
  unreadBytes: number;
}

/**
 * The sidecar's command sessions, keyed by agent: a turn sees and drives only its own agent's, and
 * they outlive the turn that started them. They end when their command exits, when killed, after
 * the idle limit, at `close()`, and with the sidecar however it dies (each session's process group
 * is tracked by the process-group reaper, so a SIGKILLed sidecar leaves none behind).
 *
 * An ended session stays until its last output has been read (or the idle limit passes), so its
 * exit code and final output are not lost; ended sessions make room for new ones, oldest first.
 */
export class SessionTable {
  readonly limits: SessionLimits;
  private readonly byAgent = new Map<string, Map<string, CommandSession>>();
  private readonly givenReaper: ProcessGroupReaper | undefined;
  private readonly now: () => number;
  private nextId = 1;
  private sweepTimer: NodeJS.Timeout | undefined;
  private closed = false;
  // Sessions between their slot's reservation and their start, per agent and in all.
  private readonly starting = new Map<string, number>();
  private startingTotal = 0;

  constructor(options: { limits?: Partial<SessionLimits>; reaper?: ProcessGroupReaper; now?: () => number } = {}) {
    this.limits = { ...defaultSessionLimits, ...options.limits };
    // Resolved at the first session: a sidecar that starts none starts no supervisor.
    this.givenReaper = options.reaper;
    this.now = options.now ?? (() => Date.now());
  }

  /**
   * Starts a session for `agentId`.
   *
   * @throws ToolRuntimeError `session_limit_reached` (with the agent's sessions listed) when the
   *   agent, or the sidecar, has as many running sessions as allowed; `tool_failed` when the
   *   command cannot start; `sidecar_unavailable` after `close()`.
   */
  async start(options: { agentId: string; command: string; exec: PreparedCommand; tty: boolean; cols: number; rows: number }): Promise<CommandSession> {
    // Counted and reserved before the first await: concurrent starts each see the others' slots.
    try {
      this.reserve(options.agentId);
    } catch (error) {
      // Refused: the prepared command never runs, so its place under the limits is given back.
      options.exec.launch.release();
      throw error;
    }
    let session: CommandSession;
    try {
      session = await CommandSession.start({
        id: `s${this.nextId++}`,
        agentId: options.agentId,
        command: options.command,
        exec: options.exec,
        tty: options.tty,
        cols: options.cols,
        rows: options.rows,
        maxBufferedChars: this.limits.maxBufferedChars,
        killGraceMs: this.limits.killGraceMs,
        reaper: this.givenReaper ?? sharedProcessGroupReaper(),
        now: this.now,
      });
    } catch (error) {
      options.exec.launch.release();
      throw error;
    } finally {
      this.unreserve(options.agentId);
      this.forgetIfEmpty(options.agentId);
    }
    if (this.closed) {
      // The table closed while it started: killed now, not leaked past close().
      await session.kill();
      session.dispose();
      throw new ToolRuntimeError('sidecar_unavailable', 'the sidecar is shutting down; the session was stopped as it started');
    }
    // Looked up again: the map may have been dropped and made anew meanwhile.
    this.sessionsOf(options.agentId).set(session.id, session);
    void session.ended.then(() => (session.lastUsedAt = this.now()));
    this.sweepTimer ??= setInterval(() => this.sweep(), Math.min(60_000, Math.max(1_000, this.limits.idleMs / 4))).unref();
    return session;
  }

  /**
   * Takes a slot for a session about to start, counting slots taken and not yet filled.
   *
   * @throws ToolRuntimeError `sidecar_unavailable` after `close()`; `session_limit_reached` when
   *   the agent, or the sidecar, has no slot left.
   */
  private reserve(agentId: string): void {
    if (this.closed) throw new ToolRuntimeError('sidecar_unavailable', 'the sidecar is shutting down; no new session starts');
    const own = this.sessionsOf(agentId);
    this.makeRoom(own);
    const starting = this.starting.get(agentId) ?? 0;
    const running = [...own.values()].filter((session) => session.running).length + starting;
    if (running >= this.limits.maxPerAgent) {
      this.forgetIfEmpty(agentId);
      throw new ToolRuntimeError(
        'session_limit_reached',
        `this agent already has ${running} running sessions${starting > 0 ? ` (${starting} of them starting)` : ''} (the limit is ${this.limits.maxPerAgent}); kill one you no longer need with kill_session, then start again. Running now:\n${this.describe(agentId)}`,
      );
    }
    if (this.runningTotal() + this.startingTotal >= this.limits.maxTotal) {
      this.forgetIfEmpty(agentId);
      throw new ToolRuntimeError('session_limit_reached', `the sidecar runs ${this.limits.maxTotal} sessions, its limit for all agents together; kill one of yours with kill_session or try later. Yours:\n${this.describe(agentId) || '(none)'}`);
    }
    this.starting.set(agentId, starting + 1);
    this.startingTotal += 1;
  }

  /** Drops the agent's entry when it holds no session and none is starting. */
  private forgetIfEmpty(agentId: string): void {
    if (this.byAgent.get(agentId)?.size === 0 && !this.starting.has(agentId)) this.byAgent.delete(agentId);
  }

  private unreserve(agentId: string): void {
    const starting = (this.starting.get(agentId) ?? 1) - 1;
    if (starting <= 0) this.starting.delete(agentId);
    else this.starting.set(agentId, starting);
    this.startingTotal -= 1;
  }

  /**
   * The agent's session `sessionId`, marked used.
   *
   * @throws ToolRuntimeError `session_not_found` when this agent has no such session (unknown,
   *   forgotten, or another agent's: those are never visible), listing the agent's own.
   */
  get(agentId: string, sessionId: string): CommandSession {
    const session = this.byAgent.get(agentId)?.get(sessionId);
    if (!session) {
      const own = this.describe(agentId);
      throw new ToolRuntimeError(
        'session_not_found',
        `there is no session ${JSON.stringify(sessionId.slice(0, 64))} for this agent (it never existed, or it ended and its output was read, or it was killed). ${own ? `This agent's sessions:\n${own}` : 'This agent has no sessions; start one with start_command.'}`,
      );
    }
    session.lastUsedAt = this.now();
    return session;
  }

  /** The agent's sessions, oldest first. */
  list(agentId: string): SessionInfo[] {
    const now = this.now();
    return [...(this.byAgent.get(agentId)?.values() ?? [])].map((session) => ({
      sessionId: session.id,
      command: session.command,
      tty: session.tty,
      state: session.running ? 'running' : 'exited',
      exitCode: session.exit?.exitCode ?? null,
      signal: session.exit?.signal ?? null,
      ageMs: now - session.startedAt,
      idleMs: now - session.lastUsedAt,
      unreadBytes: session.unread.bytes,
    }));
  }

  /** Forgets an ended session (its output was delivered). */
  drop(session: CommandSession): void {
    const own = this.byAgent.get(session.agentId);
    if (own?.get(session.id) !== session) return;
    own.delete(session.id);
    if (own.size === 0) this.byAgent.delete(session.agentId);
    session.dispose();
  }

  /** Running sessions of every agent. */
  runningTotal(): number {
    let count = 0;
    for (const own of this.byAgent.values()) for (const session of own.values()) if (session.running) count++;
    return count;
  }

  /**
   * Kills every session and forgets them; nothing new starts. Resolves once each has ended, or
   * after the kill grace and a second more. Never rejects.
   */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweepTimer);
    const all = [...this.byAgent.values()].flatMap((own) => [...own.values()]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(all.map((session) => session.kill())), new Promise((resolve) => (timer = setTimeout(resolve, this.limits.killGraceMs + 1_000)))]);
    clearTimeout(timer);
    for (const session of all) this.drop(session);
  }

  /** The agent's sessions, one line each, for messages to the model. */
  describe(agentId: string): string {
    return this.list(agentId)
      .map((info) => `- ${info.sessionId}: ${info.state === 'running' ? 'running' : `exited (${info.exitCode !== null ? `exit code ${info.exitCode}` : info.signal})`}, started ${Math.round(info.ageMs / 1000)} s ago, ${info.unreadBytes} bytes unread, \`${oneLine(info.command)}\``)
      .join('\n');
  }

  private sessionsOf(agentId: string): Map<string, CommandSession> {
    let own = this.byAgent.get(agentId);
    if (!own) this.byAgent.set(agentId, (own = new Map()));
    return own;
  }

  /** Drops the agent's oldest ended sessions while it is at its limit. */
  private makeRoom(own: Map<string, CommandSession>): void {
    for (const session of [...own.values()]) {
      if (own.size < this.limits.maxPerAgent) return;
      if (!session.running) this.drop(session);
    }
  }

  /** Kills sessions idle past the limit and forgets ended ones nobody read. */
  private sweep(): void {
    const now = this.now();
    for (const own of [...this.byAgent.values()]) {
      for (const session of [...own.values()]) {
        if (now - session.lastUsedAt < this.limits.idleMs) continue;
        if (session.running) void session.kill().then(() => this.drop(session));
        else this.drop(session);
      }
    }
    if (this.byAgent.size === 0 && this.sweepTimer) {
      clearInterval(this.sweepTimer);
      this.sweepTimer = undefined;
    }
  }
}

/** The command on one line, cut to 80 characters. */
export function oneLine(command: string): string {
  const line = command.replace(/\s+/g, ' ').trim();
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}
