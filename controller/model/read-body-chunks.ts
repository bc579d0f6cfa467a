/**
 * Reads a model server's response body chunk by chunk with an idle timeout between chunks. The
 * SDK's request timeout stops once the headers arrive, so a server that sends headers and then
 * nothing would otherwise be waited on forever.
 */
import { errorMessage, ToolRuntimeError } from '../../src/index.js';

/** Options of `readBodyChunks`. */
export interface ReadBodyChunksOptions {
  /** Longest wait for the next chunk, in ms (0: no idle timeout). */
  idleTimeoutMs: number;
  /** Aborts the read (the caller maps the rejection to `aborted`). */
  signal: AbortSignal;
  /** How far the response had got, for error messages, e.g. `12 events, the last response.output_text.delta`. */
  progress?: () => string;
}

const describeBytes = (bytes: number) => (bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB` : `${bytes} bytes`);

/**
 * Yields the body's chunks until it ends.
 *
 * @throws ToolRuntimeError `model_error` when no chunk comes within `idleTimeoutMs` (the body is
 *   cancelled) or the connection breaks mid-body ("the model server closed the connection
 *   mid-response after N bytes"); `aborted` when `signal` aborts (the body is cancelled at once).
 */
export async function* readBodyChunks(body: ReadableStream<Uint8Array>, options: ReadBodyChunksOptions): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  let bytes = 0;
  let stop: 'idle' | 'aborted' | undefined;
  const where = () => `after ${describeBytes(bytes)}${options.progress ? ` (${options.progress()})` : ''}`;
  // Cancelling the reader settles a pending read with `done`, so neither wait needs a race.
  const onAbort = () => {
    stop ??= 'aborted';
    void reader.cancel().catch(() => undefined);
  };
  const timer =
    options.idleTimeoutMs > 0
      ? setTimeout(() => {
          stop ??= 'idle';
          void reader.cancel().catch(() => undefined);
        }, options.idleTimeoutMs)
      : undefined;
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  /** The error for a read this reader stopped itself (a cancelled read may settle either way). */
  const stopped = (cause?: unknown): ToolRuntimeError | undefined => {
    if (stop === 'aborted' || options.signal.aborted) return new ToolRuntimeError('aborted', 'the model request was aborted', { cause });
    if (stop !== 'idle') return undefined;
    const seconds = Math.round(options.idleTimeoutMs / 100) / 10;
    return new ToolRuntimeError(
      'model_error',
      `the model server sent nothing for ${seconds} s ${where()}: the stream stalled (idle timeout ${options.idleTimeoutMs} ms)`,
      { cause },
    );
  };
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        const own = stopped(error);
        if (own) throw own;
        // undici reports a socket closed mid-body as "terminated" (cause: "other side closed").
        const cause = (error as { cause?: unknown }).cause;
        const detail = cause ? `${errorMessage(error)}: ${errorMessage(cause)}` : errorMessage(error);
        throw new ToolRuntimeError('model_error', `the model server closed the connection mid-response ${where()} (${detail})`, { cause: error });
      }
      const own = stopped();
      if (own) throw own;
      if (chunk.done) return;
      bytes += chunk.value.byteLength;
      timer?.refresh();
      yield chunk.value;
    }
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener('abort', onAbort);
    // Done early (completed, failed or thrown): let the connection go back to the pool or close.
    void reader.cancel().catch(() => undefined);
  }
}
