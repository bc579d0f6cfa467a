type WriteCallback = (error?: Error | null) => void;
interface WritableInternals {
  _write(chunk: unknown, encoding: BufferEncoding, callback: WriteCallback): void;
  _writev?: (chunks: Array<{ chunk: unknown; encoding: BufferEncoding }>, callback: WriteCallback) => void;
}

/**
 * Lets a grpc-js server stream (a Node Writable in object mode) hand a batch of messages to http2 in one go. grpc-js's object-mode
 * stream has only `_write`, so Node's Writable sends one message, waits for http2 to report it
 * written, then sends the next: one event-loop round per message. With `_writev`, messages
 * buffered meanwhile (or between `cork` and `uncork`) are all passed on at once, in order, and
 * http2 coalesces them into as few frames and socket writes as it can. The batch completes when
 * every message of it has; an error completes it with that error.
 */
export function enableBatchedWrites(stream: object): void {
  const writable = stream as unknown as WritableInternals;
  if (typeof writable._write !== 'function' || typeof writable._writev === 'function') return;
  writable._writev = function writev(chunks, callback) {
    const one = countdown(chunks.length, callback);
    for (const { chunk, encoding } of chunks) writable._write.call(this, chunk, encoding, one);
  };
}

/** A write callback that calls `callback` once it was itself called `count` times (first error kept). */
function countdown(count: number, callback: WriteCallback): WriteCallback {
  let pending = count;
  let failure: Error | null = null;
  return (error) => {
    if (error && !failure) failure = error;
    if (--pending === 0) callback(failure);
  };
}

/**
 * The http2 stream under a grpc-js server stream, found through grpc-js's internal call chain
 * (`call`, then `nextCall` through interceptors, to the call that holds `stream`); `undefined`
 * when the chain is not as expected, and callers then simply do without it.
 */
export function findHttp2Stream(stream: object): { cork(): void; uncork(): void; readonly writableEnded: boolean } | undefined {
  let current: unknown = (stream as { call?: unknown }).call;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const inner = (current as { stream?: unknown }).stream;
    if (typeof inner === 'object' && inner !== null && typeof (inner as { cork?: unknown }).cork === 'function' && 'session' in inner) {
      return inner as unknown as { cork(): void; uncork(): void; readonly writableEnded: boolean };
    }
    current = (current as { nextCall?: unknown }).nextCall;
  }
  return undefined;
}
