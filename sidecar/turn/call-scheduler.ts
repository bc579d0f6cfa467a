/**
 * The per-turn call scheduler: a read/write lock taken in call order. Parallel calls share the
 * lock with each other; a sequential call waits for every call that entered before it and holds
 * back every call that entered after it, however fast each one is.
 */
export interface CallScheduler {
  /**
   * Enters a call into the line, synchronously, in the order calls were received. Returns a
   * ticket whose `ready` resolves when the call may run.
   */
  enter(mode: 'parallel' | 'sequential'): CallTicket;
  /** Calls entered and not yet released (waiting or running). */
  readonly size: number;
}

/** One call's place in the scheduler's line. */
export interface CallTicket {
  /**
   * Resolves when the call may run. Rejects with the signal's reason when `signal` aborts first
   * (the ticket then leaves the line, as if released).
   */
  ready(signal: AbortSignal): Promise<void>;
  /** True once the call may run. */
  readonly granted: boolean;
  /** Leaves the line (idempotent); calls behind it may then start. */
  release(): void;
}

/** Creates an empty scheduler. */
export function createCallScheduler(): CallScheduler {
  return new Scheduler();
}

// Classes rather than closures: entering a call allocates one ticket and nothing else.
class Scheduler implements CallScheduler {
  // The line in entry order; released tickets are removed.
  line: Ticket[] = [];

  get size(): number {
    return this.line.length;
  }

  enter(mode: 'parallel' | 'sequential'): CallTicket {
    const ticket = new Ticket(this, mode);
    this.line.push(ticket);
    this.pump();
    return ticket;
  }

  remove(ticket: Ticket): void {
    // The usual case: the oldest call leaves first.
    const index = this.line[0] === ticket ? 0 : this.line.indexOf(ticket);
    if (index === 0) this.line.shift();
    else if (index > 0) this.line.splice(index, 1);
    this.pump();
  }

  private pump(): void {
    const { line } = this;
    for (let index = 0; index < line.length; index++) {
      const ticket = line[index]!;
      if (ticket.mode === 'sequential') {
        if (index === 0 && !ticket.granted) ticket.grant();
        return;
      }
      if (!ticket.granted) ticket.grant();
    }
  }
}

class Ticket implements CallTicket {
  granted = false;
  private released = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly scheduler: Scheduler,
    readonly mode: 'parallel' | 'sequential',
  ) {}

  grant(): void {
    this.granted = true;
    this.wake?.();
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.scheduler.remove(this);
  }

  ready(signal: AbortSignal): Promise<void> {
    if (this.granted) return Promise.resolve();
    if (this.released) return Promise.reject(new Error('the ticket was released before it was granted'));
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        this.release();
        return reject(signal.reason);
      }
      const onAbort = () => {
        this.wake = undefined;
        this.release();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.wake = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
    });
  }
}
