/**
 * One timer for every deadline of a turn, instead of a `setTimeout` per call: deadlines are kept
 * sorted (calls with the same `deadline_ms` arrive in deadline order, so adding is an append) and
 * a single timer is armed for the earliest live one. Cancelling only marks the entry; dead entries
 * are dropped as the timer passes them, or compacted once they are most of the list.
 */
export interface DeadlineTimer {
  /**
   * Calls `onExpire` `ms` after `from` (a reading of the timer's clock; default: now) unless the
   * returned cancel function runs first.
   */
  add(ms: number, onExpire: () => void, from?: number): () => void;
  /** Cancels every pending deadline and the timer. */
  clear(): void;
  /** Deadlines still pending (for tests). */
  readonly pending: number;
}

interface Entry {
  at: number;
  onExpire: (() => void) | undefined;
}

/** Creates a deadline timer reading time from `now` (milliseconds, monotonic). */
export function createDeadlineTimer(options: { now: () => number }): DeadlineTimer {
  const { now } = options;
  let entries: Entry[] = [];
  let live = 0;
  let timer: NodeJS.Timeout | undefined;
  let armedAt = Infinity;

  const arm = () => {
    while (entries.length > 0 && entries[0]!.onExpire === undefined) entries.shift();
    const first = entries[0];
    if (!first) {
      disarm();
      return;
    }
    if (timer && armedAt <= first.at) return;
    disarm();
    armedAt = first.at;
    timer = setTimeout(fire, Math.max(0, first.at - now()));
    // A pending deadline must not keep the process alive by itself.
    timer.unref?.();
  };
  const disarm = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    armedAt = Infinity;
  };
  const fire = () => {
    timer = undefined;
    armedAt = Infinity;
    const current = now();
    const due: Array<() => void> = [];
    while (entries.length > 0 && entries[0]!.at <= current) {
      const entry = entries.shift()!;
      if (entry.onExpire) {
        due.push(entry.onExpire);
        entry.onExpire = undefined;
        live--;
      }
    }
    arm();
    for (const onExpire of due) onExpire();
  };

  return {
    get pending() {
      return live;
    },
    add(ms, onExpire, from = now()) {
      const entry: Entry = { at: from + ms, onExpire };
      // Binary search from the end: the usual case appends.
      let low = 0;
      let high = entries.length;
      if (high > 0 && entries[high - 1]!.at <= entry.at) low = high;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (entries[middle]!.at <= entry.at) low = middle + 1;
        else high = middle;
      }
      if (low === entries.length) entries.push(entry);
      else entries.splice(low, 0, entry);
      live++;
      if (entry.at < armedAt) arm();
      return () => {
        if (entry.onExpire === undefined) return;
        entry.onExpire = undefined;
        live--;
        // The timer stays armed: re-arming per call would cost a setTimeout each. When it fires
        // with nothing due it just re-arms for the next live deadline, if any.
        // Drop dead entries from the end (the usual case: the call added last ends first) with
        // pop, which keeps the array's storage; a fresh array per call cost a new one each time.
        while (entries.length > 0 && entries[entries.length - 1]!.onExpire === undefined) entries.pop();
        if (entries.length > 64 && live * 2 < entries.length) {
          entries = entries.filter((other) => other.onExpire !== undefined);
        }
      };
    },
    clear() {
      for (const entry of entries) entry.onExpire = undefined;
      entries = [];
      live = 0;
      disarm();
    },
  };
}
