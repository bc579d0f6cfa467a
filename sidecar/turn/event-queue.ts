/**
 * A single-consumer async queue: producers push synchronously, the consumer pulls with
 * `for await`. The consumer sets the pace (the gRPC writer awaits 'drain' before it pulls again),
 * so everything stays in order and nothing is dropped.
 */
export interface EventQueue<T> extends AsyncIterable<T> {
  push(item: T): void;
  /** No more items: the iteration ends once the queued ones are consumed. */
  end(): void;
  /** Items waiting to be consumed. */
  readonly length: number;
}

/** Creates an empty queue. */
export function createEventQueue<T>(): EventQueue<T> {
  let items: T[] = [];
  let head = 0;
  let ended = false;
  let waiter: ((result: IteratorResult<T>) => void) | undefined;

  return {
    get length() {
      return items.length - head;
    },
    push(item) {
      if (ended) return;
      if (waiter) {
        const wake = waiter;
        waiter = undefined;
        wake({ value: item, done: false });
        return;
      }
      items.push(item);
    },
    end() {
      ended = true;
      if (waiter && head >= items.length) {
        const wake = waiter;
        waiter = undefined;
        wake({ value: undefined, done: true });
      }
    },
    [Symbol.asyncIterator]() {
      return {
        next(): Promise<IteratorResult<T>> {
          if (head < items.length) {
            const value = items[head++] as T;
            // Compact now and then so a long turn does not keep consumed items alive.
            if (head > 1024 && head * 2 > items.length) {
              items = items.slice(head);
              head = 0;
            }
            return Promise.resolve({ value, done: false });
          }
          if (ended) return Promise.resolve({ value: undefined, done: true });
          return new Promise((resolve) => {
            waiter = resolve;
          });
        },
        return(): Promise<IteratorResult<T>> {
          ended = true;
          items = [];
          head = 0;
          return Promise.resolve({ value: undefined, done: true });
        },
      };
    },
  };
}
