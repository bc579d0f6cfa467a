/**
 * A single-consumer queue between a turn's producers and its writer. Producers push
 * synchronously; the consumer either takes items synchronously in batches (`take` until empty,
 * then `readable`), which costs one promise per batch rather than one per item, or iterates with
 * `for await`. The consumer sets the pace, so everything stays in order and nothing is dropped.
 *
 * Producers that want to slow down ask `room(signal)`: it resolves at once while fewer than
 * `highWaterMark` items wait, otherwise once the consumer has taken the queue down to half of it.
 */
export interface EventQueue<T> extends AsyncIterable<T> {
  push(item: T): void;
  /** Takes the oldest item, or `undefined` when none waits (items are never `undefined`). */
  take(): T | undefined;
  /**
   * Resolves when an item waits or the queue has ended; rejects with the signal's reason when
   * `signal` aborts first.
   */
  readable(signal: AbortSignal): Promise<void>;
  /**
   * Calls `callback` once, when an item waits or the queue has ended: at once (synchronously)
   * when that is already so, else from the `push` or `end` that makes it so. One callback waits
   * at a time (a second replaces the first); `undefined` cancels it. No promise per wait.
   */
  whenReadable(callback: (() => void) | undefined): void;
  /**
   * Resolves when the queue has room (see above), or when `signal` aborts (never rejects: a
   * producer that ignores the promise must not see an unhandled rejection).
   */
  room(signal?: AbortSignal): Promise<void>;
  /** No more items: the consumer ends once the queued ones are taken. */
  end(): void;
  /** True once `end` was called. */
  readonly ended: boolean;
  /** Items waiting to be consumed. */
  readonly length: number;
}

const resolved = Promise.resolve();

/** Creates an empty queue; `highWaterMark` (default 256) is where `room` starts to wait. */
export function createEventQueue<T>(options: { highWaterMark?: number } = {}): EventQueue<T> {
  const highWaterMark = Math.max(1, options.highWaterMark ?? 256);
  const lowWaterMark = Math.floor(highWaterMark / 2);
  // Items live in items[head..tail). The array is kept when it empties (both indexes go back to 0):
  // a fresh array per batch cost a new backing store each time, on every call.
  let items: T[] = [];
  let head = 0;
  let tail = 0;
  let ended = false;
  let wakeReader: (() => void) | undefined;
  let readableCallback: (() => void) | undefined;
  let rejectReader: ((reason: unknown) => void) | undefined;
  let watched: AbortSignal | undefined;
  let readerSignal: AbortSignal | undefined;
  let roomWaiters: Array<() => void> = [];

  const length = () => tail - head;
  const wake = () => {
    const resolve = wakeReader;
    wakeReader = undefined;
    rejectReader = undefined;
    resolve?.();
  };
  const callBack = () => {
    const callback = readableCallback;
    readableCallback = undefined;
    callback?.();
  };
  const readerAborted = (signal: AbortSignal) => {
    if (watched === signal) watched = undefined;
    if (readerSignal !== signal) return;
    const reject = rejectReader;
    wakeReader = undefined;
    rejectReader = undefined;
    reject?.(signal.reason);
  };
  const releaseRoom = () => {
    const waiters = roomWaiters;
    roomWaiters = [];
    for (const resolve of waiters) resolve();
  };

  const queue: EventQueue<T> = {
    get length() {
      return length();
    },
    get ended() {
      return ended;
    },
    push(item) {
      if (ended) return;
      items[tail++] = item;
      if (wakeReader) wake();
      if (readableCallback) callBack();
    },
    take() {
      if (head >= tail) return undefined;
      const item = items[head] as T;
      items[head++] = undefined as T;
      if (head === tail) {
        head = 0;
        tail = 0;
        // A backlog's large array is let go once it drained; a small one is reused.
        if (items.length > 1024) items = [];
      } else if (head > 1024 && head * 2 > tail) {
        // Compact now and then so a long backlog does not keep taken slots alive.
        items = items.slice(head, tail);
        tail -= head;
        head = 0;
      }
      if (roomWaiters.length > 0 && length() <= lowWaterMark) releaseRoom();
      return item;
    },
    readable(signal) {
      if (head < tail || ended) return resolved;
      if (signal.aborted) return Promise.reject(signal.reason);
      // One abort listener per signal for the queue's life, not one per wait: the writer waits
      // once per batch, and listener churn showed in profiles.
      if (watched !== signal) {
        watched = signal;
        signal.addEventListener('abort', () => readerAborted(signal), { once: true });
      }
      return new Promise<void>((resolve, reject) => {
        wakeReader = resolve;
        rejectReader = reject;
        readerSignal = signal;
      });
    },
    whenReadable(callback) {
      readableCallback = callback;
      if (callback && (head < tail || ended)) callBack();
    },
    room(signal) {
      if (length() < highWaterMark || ended || signal?.aborted) return resolved;
      return new Promise<void>((resolve) => {
        const done = () => {
          signal?.removeEventListener('abort', done);
          resolve();
        };
        signal?.addEventListener('abort', done, { once: true });
        roomWaiters.push(done);
      });
    },
    end() {
      ended = true;
      releaseRoom();
      if (wakeReader) wake();
      if (readableCallback) callBack();
    },
    [Symbol.asyncIterator]() {
      const never = new AbortController().signal;
      return {
        async next(): Promise<IteratorResult<T>> {
          for (;;) {
            const item = queue.take();
            if (item !== undefined) return { value: item, done: false };
            if (ended) return { value: undefined, done: true };
            await queue.readable(never);
          }
        },
        async return(): Promise<IteratorResult<T>> {
          ended = true;
          items = [];
          head = 0;
          tail = 0;
          releaseRoom();
          return { value: undefined, done: true };
        },
      };
    },
  };
  return queue;
}
