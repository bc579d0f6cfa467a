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

interface Entry {
  mode: 'parallel' | 'sequential';
  granted: boolean;
  released: boolean;
  wake?: () => void;
}

/** Creates an empty scheduler. */
export function createCallScheduler(): CallScheduler {
  // The line in entry order; released entries are removed.
  let line: Entry[] = [];

  const pump = () => {
    for (let index = 0; index < line.length; index++) {
      const entry = line[index]!;
      if (entry.mode === 'sequential') {
        if (index === 0 && !entry.granted) grant(entry);
        return;
      }
      if (!entry.granted) grant(entry);
    }
  };
  const grant = (entry: Entry) => {
    entry.granted = true;
    entry.wake?.();
  };

  return {
    get size() {
      return line.length;
    },
    enter(mode) {
      const entry: Entry = { mode, granted: false, released: false };
      line.push(entry);
      pump();
      const release = () => {
        if (entry.released) return;
        entry.released = true;
        line = line.filter((other) => other !== entry);
        pump();
      };
      return {
        get granted() {
          return entry.granted;
        },
        release,
        ready(signal) {
          if (entry.granted) return Promise.resolve();
          if (entry.released) return Promise.reject(new Error('the ticket was released before it was granted'));
          return new Promise<void>((resolve, reject) => {
            if (signal.aborted) {
              release();
              return reject(signal.reason);
            }
            const onAbort = () => {
              entry.wake = undefined;
              release();
              reject(signal.reason);
            };
            signal.addEventListener('abort', onAbort, { once: true });
            entry.wake = () => {
              signal.removeEventListener('abort', onAbort);
              resolve();
            };
          });
        },
      };
    },
  };
}
