import type { ClientDuplexStream } from '@grpc/grpc-js';
import { errorMessage, ToolRuntimeError } from '../../src/index.js';
import type { TurnRequest, TurnResponse } from '../../src/gen/toolruntime/v1/sidecar.js';
import { callMessageBytes } from './call-message-bytes.js';
import { answerClientRequest, combineHandlers } from './answer-client-request.js';
import { CallState } from './call-state.js';
import { callResultFromProto, presentationPayload, toolDefinitionFromProto } from './from-proto.js';
import {
  errorResult,
  type CallHandle,
  type CallRequest,
  type CallResult,
  type ApproveCallback,
  type ClientRequestHandler,
  type ToolDefinition,
  type ToolTurn,
  type TurnContextInput,
} from './sidecar-types.js';
import { turnContextToProto } from './from-proto.js';

import type { TurnTrace } from '../telemetry/controller-telemetry.js';

type TurnStream = ClientDuplexStream<TurnRequest, TurnResponse>;

/** Bounds of a turn's waits. */
export interface SidecarTurnTimeouts {
  /** How long to wait for the tool set after sending open (default 15 s). */
  openTimeoutMs?: number;
  /**
   * After a call is cancelled, how long to wait for the sidecar's `aborted` result before
   * resolving the call locally with one (default 5 s).
   */
  cancelGraceMs?: number;
  /** The channel's largest message, in bytes (default 16 MiB): a call that cannot fit is refused locally. */
  maxMessageBytes?: number;
}

/** What the sidecar accepts in flight when its tool set does not say (an older sidecar sends 0). */
export const DEFAULT_MAX_CALLS_IN_FLIGHT = 256;

/** How a turn is opened: its waits, its signal, and who answers the sidecar's questions. */
export interface OpenTurnOptions extends SidecarTurnTimeouts {
  /** Aborting it while the turn opens cancels the stream. */
  signal?: AbortSignal;
  /**
   * Answers the sidecar's reverse requests (control-plane operations, approvals). Without one,
   * control requests get ControlError `unavailable` and approvals a denial, so a call never hangs.
   */
  onClientRequest?: ClientRequestHandler;
  /**
   * Decides the approval requests (taken before `onClientRequest` sees them). Give the turn's
   * context an `approvalPolicy` so the sidecar asks. Without either, approvals are denied.
   */
  approve?: ApproveCallback;
}

/**
 * One open Turn stream. Demultiplexes the sidecar's events by call_id into per-call handles.
 * When the stream fails, every pending call resolves with an error result (`sidecar_unavailable`,
 * or `aborted` when this client cancelled the stream) and `failure` is set.
 */
export class SidecarTurn implements ToolTurn {
  tools: ToolDefinition[] = [];
  instructions = '';
  /** How many calls the sidecar accepts in flight on this turn (its tool set says; 256 when it does not). */
  maxCallsInFlight = DEFAULT_MAX_CALLS_IN_FLIGHT;
  failure: Error | undefined;
  /** The turn's trace, begun when its stream opened (set by the client, only with tracing on). */
  trace: TurnTrace | undefined;
  /** Resolves when the stream has ended, however it ended. */
  readonly ended: Promise<void>;
  private readonly stream: TurnStream;
  private readonly pending = new Map<string, CallState>();
  /** The calls in flight that each signal cancels. */
  private readonly bySignal = new Map<AbortSignal, Set<CallState>>();
  private readonly usedIds = new Set<string>();
  private readonly cancelGraceMs: number;
  private readonly maxMessageBytes: number;
  private cancelledByUs = false;
  private halfClosed = false;
  private isEnded = false;
  private onToolSet: ((error?: Error) => void) | undefined;
  private readonly onClientRequest: ClientRequestHandler | undefined;
  /** One per reverse request being answered; aborted when its call ends or the stream ends. */
  private readonly answering = new Set<AbortController>();
  private resolveEnded!: () => void;

  private constructor(stream: TurnStream, timeouts: OpenTurnOptions) {
    this.stream = stream;
    this.onClientRequest = combineHandlers(timeouts.onClientRequest, timeouts.approve);
    this.cancelGraceMs = timeouts.cancelGraceMs ?? 5_000;
    this.maxMessageBytes = timeouts.maxMessageBytes ?? 16 * 1024 * 1024;
    this.ended = new Promise((resolve) => {
      this.resolveEnded = resolve;
    });
    stream.on('data', (response: TurnResponse) => this.handle(response));
    stream.on('error', (error: Error) => this.fail(error));
    stream.on('end', () => this.fail(undefined));
    stream.on('close', () => this.fail(undefined));
  }

  /**
   * Sends OpenTurn on `stream` and waits for the tool set.
   *
   * @throws ToolRuntimeError `sidecar_unavailable` when the stream fails or the tool set does not
   *   come within `openTimeoutMs`; `aborted` when `signal` aborts (the stream is cancelled).
   */
  static async open(stream: TurnStream, context: TurnContextInput, options: OpenTurnOptions = {}): Promise<SidecarTurn> {
    const turn = new SidecarTurn(stream, options);
    const timeoutMs = options.openTimeoutMs ?? 15_000;
    try {
      await new Promise<void>((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined;
        const onAbort = () => {
          clearTimeout(timer);
          reject(new ToolRuntimeError('aborted', 'opening the turn was aborted', { cause: options.signal?.reason }));
        };
        // Checked before the timer exists: an already-aborted open must not keep the process alive for openTimeoutMs.
        if (options.signal?.aborted) return onAbort();
        timer = setTimeout(() => {
          options.signal?.removeEventListener('abort', onAbort);
          reject(new ToolRuntimeError('sidecar_unavailable', `the sidecar sent no tool set within ${timeoutMs} ms`));
        }, timeoutMs);
        options.signal?.addEventListener('abort', onAbort, { once: true });
        turn.onToolSet = (error) => {
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
          if (error) reject(error);
          else resolve();
        };
        stream.write({ request: { $case: 'open', value: { context: turnContextToProto(context) } } });
      });
    } catch (error) {
      turn.abort();
      throw error;
    }
    return turn;
  }

  private handle(response: TurnResponse): void {
    const event = response.event;
    if (event?.$case === 'toolSet') {
      const waiter = this.onToolSet;
      this.onToolSet = undefined;
      try {
        this.tools = event.value.tools.map(toolDefinitionFromProto);
        this.instructions = event.value.instructions;
        this.maxCallsInFlight = event.value.maxCallsInFlight || DEFAULT_MAX_CALLS_IN_FLIGHT;
        waiter?.();
      } catch (error) {
        waiter?.(error as Error);
      }
      return;
    }
    const state = this.pending.get(response.callId);
    if (!state || !event) return;
    if (event.$case === 'activityStarted') {
      state.push({ type: 'activity-started', callId: response.callId, label: event.value.label });
    } else if (event.$case === 'presentation') {
      state.push({
        type: 'presentation',
        callId: response.callId,
        kind: event.value.kind,
        payload: presentationPayload(event.value.payloadJson),
      });
    } else if (event.$case === 'result') {
      this.pending.delete(response.callId);
      this.settle(state, callResultFromProto(response.callId, event.value));
    } else if (event.$case === 'clientRequest') {
      this.answer(state, event.value);
    }
  }

  /**
   * Answers one reverse request of a pending call through the handler and sends the reply, unless
   * the call ended, the stream ended or the request side was closed meanwhile.
   */
  private answer(state: CallState, request: Parameters<typeof answerClientRequest>[0]['request']): void {
    const controller = new AbortController();
    this.answering.add(controller);
    void state.result.then(() => controller.abort(new ToolRuntimeError('aborted', 'the call ended')));
    void answerClientRequest({ callId: state.callId, request, handler: this.onClientRequest, signal: controller.signal }).then((reply) => {
      this.answering.delete(controller);
      if (!reply || this.isEnded || this.halfClosed || controller.signal.aborted) return;
      this.stream.write({ request: { $case: 'reply', value: reply } });
    });
  }

  private fail(error: Error | undefined): void {
    if (!this.isEnded) {
      this.isEnded = true;
      this.resolveEnded();
    }
    const unexpected = !this.cancelledByUs && (error !== undefined || this.pending.size > 0 || this.onToolSet);
    if (unexpected && !this.failure) {
      this.failure = new ToolRuntimeError(
        'sidecar_unavailable',
        `the sidecar stream failed: ${error ? errorMessage(error) : 'it ended before every call had a result'}`,
        { cause: error },
      );
    }
    for (const controller of this.answering) controller.abort(new ToolRuntimeError('aborted', 'the turn stream ended'));
    this.answering.clear();
    const waiter = this.onToolSet;
    this.onToolSet = undefined;
    waiter?.(
      this.failure ??
        new ToolRuntimeError('sidecar_unavailable', `the sidecar stream ended before the tool set${error ? `: ${errorMessage(error)}` : ''}`),
    );
    for (const [callId, state] of this.pending) {
      this.settle(
        state,
        this.cancelledByUs
          ? errorResult(callId, 'aborted', 'The call was aborted because the turn was cancelled.')
          : errorResult(callId, 'sidecar_unavailable', `The tool sidecar became unavailable before the call finished (${errorMessage(this.failure)}).`),
      );
    }
    this.pending.clear();
  }

  /**
   * Sends one call. Never throws: a call on a failed or closed turn, or with a call id already
   * used in this turn, resolves at once with an error result. Aborting `signal` sends CancelCall.
   */
  call(request: CallRequest, options: { signal?: AbortSignal } = {}): CallHandle {
    const state = new CallState(request.callId);
    if (this.usedIds.has(request.callId)) {
      state.finish(errorResult(request.callId, 'duplicate_call_id', `call id "${request.callId}" was already used in this turn`));
      return state;
    }
    this.usedIds.add(request.callId);
    if (this.isEnded || this.halfClosed) {
      const code = this.failure ? 'sidecar_unavailable' : 'aborted';
      state.finish(errorResult(request.callId, code, `The turn is ${this.failure ? `unavailable (${this.failure.message})` : 'closed'}.`));
      return state;
    }
    if (options.signal?.aborted) {
      state.finish(errorResult(request.callId, 'aborted', 'The call was aborted before it was sent.'));
      return state;
    }
    // grpc-js cancels the whole stream, every call on it, when one message is over the limit.
    if (callMessageBytes(request, this.maxMessageBytes) > this.maxMessageBytes) {
      const bytes = Buffer.byteLength(request.argumentsJson, 'utf8');
      state.finish(
        errorResult(
          request.callId,
          'arguments_too_large',
          `Arguments for tool \`${request.name}\` are ${bytes} bytes, over the ${this.maxMessageBytes}-byte message limit of the tool sidecar's connection: send less, or split the work into several calls.`,
        ),
      );
      return state;
    }
    this.pending.set(request.callId, state);
    this.stream.write({
      request: {
        $case: 'call',
        value: {
          callId: request.callId,
          name: request.name,
          namespace: request.namespace ?? '',
          argumentsJson: request.argumentsJson,
          deadlineMs: request.deadlineMs ?? 0,
          traceparent: request.traceparent ?? '',
          tracestate: request.tracestate ?? '',
        },
      },
    });
    if (options.signal) this.watch(state, options.signal);
    return state;
  }

  /**
   * Cancels `state`'s call when `signal` aborts. One listener per signal, however many calls share
   * it (a loop passes its turn's signal to every call): a listener per call crossed the
   * EventTarget leak warning at 11 parallel calls and cost an add and a remove per call.
   */
  private watch(state: CallState, signal: AbortSignal): void {
    state.signal = signal;
    let calls = this.bySignal.get(signal);
    if (!calls) {
      calls = new Set();
      this.bySignal.set(signal, calls);
      signal.addEventListener('abort', this.onSignalAbort, { once: true });
    }
    calls.add(state);
  }

  private readonly onSignalAbort = (event: Event): void => {
    const signal = event.target as AbortSignal;
    const calls = this.bySignal.get(signal);
    this.bySignal.delete(signal);
    for (const state of calls ?? []) {
      state.signal = undefined;
      this.cancel(state.callId, errorMessage(signal.reason ?? 'aborted'));
      state.graceTimer = setTimeout(() => {
        if (this.pending.get(state.callId) !== state) return;
        this.pending.delete(state.callId);
        state.finish(errorResult(state.callId, 'aborted', 'The call was aborted (the sidecar did not confirm in time).'));
      }, this.cancelGraceMs);
    }
  };

  /** Forgets a call that has its result: its signal's listener goes when no other call uses it. */
  private settle(state: CallState, result: CallResult): void {
    if (state.graceTimer) clearTimeout(state.graceTimer);
    const signal = state.signal;
    if (signal) {
      state.signal = undefined;
      const calls = this.bySignal.get(signal);
      if (calls?.delete(state) && calls.size === 0) {
        this.bySignal.delete(signal);
        signal.removeEventListener('abort', this.onSignalAbort);
      }
    }
    state.finish(result);
  }

  /** Sends CancelCall for one call; does nothing when the call is not pending. */
  cancel(callId: string, reason = 'cancelled by the client'): void {
    if (!this.pending.has(callId) || this.isEnded) return;
    this.stream.write({ request: { $case: 'cancel', value: { callId, reason } } });
  }

  /**
   * Ends the turn: half-closes the request side so running calls finish, waits for the stream to
   * end (at most `timeoutMs`, default 10 s, or until `signal` aborts), then cancels the RPC, which
   * aborts whatever still runs.
   */
  async close(options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<void> {
    if (this.isEnded) return;
    if (!this.halfClosed) {
      this.halfClosed = true;
      this.stream.end();
    }
    const timeoutMs = options.timeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const bounded = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      onAbort = () => resolve();
      if (options.signal?.aborted) resolve();
      else options.signal?.addEventListener('abort', onAbort, { once: true });
    });
    await Promise.race([this.ended, bounded]);
    clearTimeout(timer);
    // The caller's signal may outlive this turn by far (a whole job): leave nothing on it.
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    this.abort();
  }

  /** Cancels the RPC at once: the sidecar aborts every running call; pending calls resolve `aborted`. */
  abort(): void {
    if (this.isEnded) return;
    this.cancelledByUs = true;
    this.stream.cancel();
    this.fail(undefined);
  }
}
