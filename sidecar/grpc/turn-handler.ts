import { status, type ServerDuplexStream } from '@grpc/grpc-js';
import { errorMessage } from '../../src/errors.js';
import type { Logger } from '../../src/logger.js';
import { ClientReply, type ToolDefinition, type TurnRequest, type TurnResponse } from '../../src/gen/toolruntime/v1/sidecar.js';
import type { TurnContext } from '../categories/category.js';
import type { TurnEventSource, TurnSession } from '../turn/turn-session.js';
import { enableBatchedWrites, findHttp2Stream } from './batch-writes.js';
import { checkTurnContext, checkTurnReply } from './check-turn-request.js';
import { undecodableReason } from './decode-turn-request.js';
import { toGrpcStatus } from './grpc-status.js';
import { toClientReplyPayload, toDomainTurnContext, toTurnResponse } from './proto-mapping.js';

/** What opening a turn yields: the tool set to answer with, and the session that runs its calls. */
export interface OpenedTurn {
  tools: ToolDefinition[];
  instructions: string;
  /** The sidecar's per-turn limit of calls in flight, told to the client. */
  maxCallsInFlight: number;
  session: TurnSession;
}

/** A live Turn stream, as the server sees it while draining. */
export interface TurnHandle {
  readonly activeCalls: number;
  /** Aborts the turn's calls, sends their results, then ends the stream with UNAVAILABLE. */
  shutdown(reason: string): Promise<void>;
  /** Settles when the stream has ended, however it ended. */
  readonly closed: Promise<void>;
}

const resolved = Promise.resolve();

/**
 * Serves one Turn stream: the first request must be `open` (else INVALID_ARGUMENT), a second
 * `open` fails with FAILED_PRECONDITION; calls and cancels go to the session, whose events are
 * written in order with backpressure (awaiting 'drain'). Half-close lets running calls finish and
 * then ends the stream; cancellation (or the client vanishing) aborts every call.
 *
 * Events are written in batches: the writer wakes once the tick's microtasks have run, takes every
 * event waiting and hands them to http2 as one corked write. While the client does not read, the
 * writer waits for 'drain' and the session's queue fills, which is what paces tools that await
 * `emit` (and stops those that do not, past `maxQueuedEvents`).
 */
export function handleTurn(
  stream: ServerDuplexStream<TurnRequest, TurnResponse>,
  options: {
    open: (context: TurnContext, signal: AbortSignal) => Promise<OpenedTurn>;
    logger: Logger;
    /** The bound of a reverse-request reply (`--max-client-message-bytes`; default 1 MiB). */
    maxClientMessageBytes?: number;
  },
): TurnHandle {
  const { logger } = options;
  enableBatchedWrites(stream);
  const http2 = findHttp2Stream(stream);
  const turnAbort = new AbortController();
  let phase: 'awaiting-open' | 'opening' | 'open' | 'closed' = 'awaiting-open';
  let session: TurnSession | undefined;
  let halfClosed = false;
  let shutdownReason: string | undefined;
  const buffered: TurnRequest[] = [];
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let pipeDone: Promise<void> = Promise.resolve();

  const finish = () => {
    if (phase === 'closed') return;
    phase = 'closed';
    turnAbort.abort();
    session?.abort('the turn stream ended');
    resolveClosed();
  };
  const fail = (code: status, details: string) => {
    if (phase === 'closed') return;
    logger.debug('turn stream failed', { code, details });
    session?.abort(details);
    finish();
    stream.emit('error', { code, details });
  };

  const dispatch = (request: TurnRequest) => {
    const current = session;
    if (!current) return;
    switch (request.request?.$case) {
      case 'call':
        // A decoded CallTool is a CallRequest as it is (the same fields): no copy per call.
        current.call(request.request.value);
        return;
      case 'cancel':
        current.cancel(request.request.value.callId, request.request.value.reason);
        return;
      case 'reply': {
        // Bounded first (approval reason cut). A reply over the other bounds goes on as it is: an
        // oversized id matches no waiting request, and an oversized payload fails the request it
        // answers at once (the session checks its size) rather than leave the call waiting.
        const checked = checkTurnReply(request.request.value, options.maxClientMessageBytes);
        if (!checked.ok) logger.debug('a client reply is over its bounds', { reason: checked.reason });
        const reply = checked.ok ? checked.reply : request.request.value;
        // Measured again from the decoded reply: grpc-js does not expose the frame's size here.
        current.reply(reply.requestId, toClientReplyPayload(reply), ClientReply.encode(reply).finish().length);
        return;
      }
      case 'open':
        fail(status.FAILED_PRECONDITION, 'the turn is already open: send `open` once, as the first request of a Turn stream');
        return;
      default:
        fail(status.INVALID_ARGUMENT, 'the request carries none of `open`, `call`, `cancel` or `reply`');
    }
  };

  // Writes in batches: every event that waits is written in the same tick (so http2 coalesces
  // the frames); 'drain' sets the pace. Driven by callbacks, not an async loop: waiting for a batch
  // costs one settled-promise reaction and one process.nextTick, not two promises and their awaits.
  const pipe = (events: TurnEventSource): Promise<void> =>
    new Promise<void>((resolvePipe) => {
      const signal = turnAbort.signal;
      let settled = false;
      const end = () => {
        if (settled) return;
        settled = true;
        events.whenReadable(undefined);
        stream.off('drain', flush);
        signal.removeEventListener('abort', end);
        if (phase !== 'closed' && shutdownReason !== undefined) {
          fail(status.UNAVAILABLE, shutdownReason);
        } else if (phase !== 'closed') {
          phase = 'closed';
          stream.end();
          resolveClosed();
        }
        resolvePipe();
      };
      // Runs after the tick's microtasks: a call that settles within them (most do) then has its
      // activity_started and result written as one batch, with no event-loop turn between.
      const scheduleFlush = () => process.nextTick(flush);
      const onReadable = () => void resolved.then(scheduleFlush);
      function flush(): void {
        if (settled) return;
        try {
          let event = events.take();
          while (event !== undefined) {
            if (phase === 'closed') return end();
            // grpc-js ended the http2 stream itself (a frame it could not decompress, the RPC's
            // deadline) and waits to send its status: a write now would error the stream and lose it.
            if (http2?.writableEnded) {
              finish();
              return end();
            }
            // Cork both grpc-js's stream and the http2 stream under it, so the batch reaches
            // nghttp2 as one write (activity_started and result of a quick call together).
            http2?.cork();
            stream.cork();
            let room = true;
            try {
              while (event !== undefined && room) {
                room = stream.write(toTurnResponse(event));
                event = room ? events.take() : undefined;
              }
            } finally {
              stream.uncork();
              http2?.uncork();
            }
            if (settled) return;
            if (!room) {
              stream.once('drain', flush);
              return;
            }
          }
          if (phase === 'closed' || events.done) return end();
          events.whenReadable(onReadable);
        } catch (error) {
          if (phase !== 'closed') fail(status.INTERNAL, `the sidecar failed writing the turn: ${errorMessage(error)}`);
          end();
        }
      }
      // The turn ended (cancelled, failed, the client gone): stop waiting, write nothing more.
      signal.addEventListener('abort', end, { once: true });
      flush();
    });

  const open = async (request: TurnRequest & { request: { $case: 'open' } }) => {
    phase = 'opening';
    const context = toDomainTurnContext(request.request.value.context);
    let opened: OpenedTurn;
    try {
      opened = await options.open(context, turnAbort.signal);
    } catch (error) {
      const mapped = toGrpcStatus(error);
      fail(mapped.code, `could not open the turn: ${mapped.details}`);
      return;
    }
    if ((phase as string) === 'closed') {
      opened.session.abort('the turn stream ended while it was opening');
      return;
    }
    session = opened.session;
    phase = 'open';
    stream.write({ callId: '', event: { $case: 'toolSet', value: { tools: opened.tools, instructions: opened.instructions, maxCallsInFlight: opened.maxCallsInFlight } } });
    pipeDone = pipe(session.events);
    for (const pending of buffered.splice(0)) {
      if (phase !== 'open') break;
      dispatch(pending);
    }
    if (halfClosed) session.endInput();
  };

  stream.on('data', (request: TurnRequest) => {
    if (phase === 'closed') return;
    const undecodable = undecodableReason(request);
    if (undecodable !== undefined) return fail(status.INVALID_ARGUMENT, undecodable);
    if (phase === 'awaiting-open') {
      if (request.request?.$case !== 'open') {
        fail(status.INVALID_ARGUMENT, `the first request of a Turn stream must be \`open\`, got ${request.request ? `\`${request.request.$case}\`` : 'an empty request'}`);
        return;
      }
      const outOfBounds = checkTurnContext(request.request.value.context);
      if (outOfBounds !== undefined) return fail(status.INVALID_ARGUMENT, `the turn's context is refused: ${outOfBounds}`);
      void open(request as TurnRequest & { request: { $case: 'open' } });
      return;
    }
    if (phase === 'opening') {
      if (request.request?.$case === 'open') fail(status.FAILED_PRECONDITION, 'the turn is already open: send `open` once, as the first request of a Turn stream');
      else buffered.push(request);
      return;
    }
    dispatch(request);
  });
  stream.on('end', () => {
    halfClosed = true;
    if (phase === 'awaiting-open') fail(status.INVALID_ARGUMENT, 'the Turn stream ended before its `open` request');
    else if (phase === 'open') session?.endInput();
  });
  stream.on('cancelled', () => {
    logger.debug('turn cancelled by the client');
    finish();
  });
  stream.on('error', () => finish());
  stream.on('close', () => finish());

  return {
    get activeCalls() {
      return session?.activeCalls ?? 0;
    },
    closed,
    async shutdown(reason) {
      if (phase === 'closed') return;
      if (!session) {
        fail(status.UNAVAILABLE, reason);
        return;
      }
      shutdownReason = reason;
      session.abort(reason);
      await pipeDone;
    },
  };
}
