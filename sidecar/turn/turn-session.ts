import { validateToolArguments, type Logger, type WorkerAgentTool } from '../../src/index.js';
import { agentToolMap } from '../../src/tool/agent-tool-map.js';
import { toolKey } from '../../src/schema/collect-tool-schemas.js';
import type { ApprovalPolicy } from '../categories/category.js';
import type { SidecarLimits } from '../sidecar-limits.js';
import { boundCancelReason, checkCallRequest, quotePrefix } from './bound-request.js';
import { errorResult, safeJsonStringify } from './build-result.js';
import { createCallScheduler } from './call-scheduler.js';
import { createClientRequests, type ClientRequests } from './client-requests.js';
import { createDeadlineTimer } from './deadline-timer.js';
import { createEventQueue } from './event-queue.js';
import { executeCall, type CallOutput, type RunningCall } from './execute-call.js';
import type { CallRequest, ClientReplyPayload, TurnEvent } from './turn-event.js';

/** One turn's calls: scheduling, execution and the stream of what happens. */
export interface TurnSession {
  /**
   * Takes one call, in the order received. Never throws: every call gets exactly one `result`
   * event (unknown tool, duplicate id, too many calls and bad arguments get one at once). Fields
   * over `REQUEST_LIMITS` (bound-request.ts) are refused first, quoting only a prefix.
   */
  call(request: CallRequest): void;
  /**
   * Aborts one call (its result comes with code `aborted`, the reason cut to 1,000 characters); an
   * unknown or finished id is ignored.
   */
  cancel(callId: string, reason?: string): void;
  /**
   * Routes the client's reply to a reverse request (control or approval) by its id; an unknown or
   * already answered id is ignored. `sizeBytes` is the reply's encoded size, checked against
   * `limits.maxClientMessageBytes`.
   */
  reply(requestId: string, reply: ClientReplyPayload | undefined, sizeBytes: number): void;
  /** No more calls: `events` ends once every running call has sent its result. */
  endInput(): void;
  /**
   * Ends the turn: aborts every call still waiting or running (their tools' children too) and
   * ends `events` once each has settled or passed its abort grace.
   */
  abort(reason?: string): void;
  /**
   * Everything that happens, in order, for one consumer: iterate it, or (cheaper) `take` events
   * synchronously until none is left and then await `readable`. Taking an event is what makes
   * room for tools that await `emit`.
   */
  readonly events: TurnEventSource;
  /** Calls waiting or running. */
  readonly activeCalls: number;
}

/** The session's outgoing events, for its one consumer (the gRPC writer). */
export interface TurnEventSource extends AsyncIterable<TurnEvent> {
  /** The oldest unsent event, or `undefined` when none waits. */
  take(): TurnEvent | undefined;
  /** Resolves when an event waits or the stream of events has ended; rejects when `signal` aborts. */
  readable(signal: AbortSignal): Promise<void>;
  /**
   * Calls `callback` once when an event waits or the events have ended (synchronously when that
   * is already so); `undefined` cancels a waiting one. The writer's way to wait without a promise.
   */
  whenReadable(callback: (() => void) | undefined): void;
  /** True once no more events will come and every one was taken. */
  readonly done: boolean;
}

/**
 * Where `emit` starts to wait: unsent events of the whole turn. Kept at half of
 * `maxQueuedEvents` at most, so a tool that awaits `emit` never reaches the hard cap.
 */
const EMIT_HIGH_WATER_MARK = 256;

/**
 * Creates a turn session over an assembled tool set.
 *
 * Scheduling follows the proto: parallel tools run together, a sequential one waits for every
 * call received before it and holds back every later one. Each call's signal fires on cancel,
 * on its deadline (`deadline_ms`, 0 → `limits.defaultCallDeadlineMs`, capped at
 * `limits.maxCallDeadlineMs`) and when the turn ends; its controller is aborted when the call
 * ends however it ends, so a tool's child processes never outlive it.
 *
 * Memory stays bounded when the client reads slowly: `emit` resolves once fewer than 256 events of
 * the turn wait to be sent (fewer than half of `limits.maxQueuedEvents` when that is lower), and a
 * call with more than `limits.maxQueuedEvents` unsent presentation events (a tool that does not
 * await `emit`) is aborted with `tool_failed`.
 */
export function createTurnSession(options: {
  tools: WorkerAgentTool[];
  limits: SidecarLimits;
  logger: Logger;
  /**
   * The turn's reverse requests; the categories' control channel is its `channel`. A fresh one
   * when absent (approvals still work).
   */
  clientRequests?: ClientRequests;
  /** Which calls ask the client's approval after validation, before `execute`; none when absent. */
  approvalPolicy?: ApprovalPolicy;
  /** Labels for log lines (agent, turn). */
  logFields?: Record<string, unknown>;
  /** Repairs and validates a call's arguments (default `validateToolArguments`; telemetry wraps it). */
  validateArguments?: typeof validateToolArguments;
  now?: () => number;
}): TurnSession {
  const { limits, logger } = options;
  const now = options.now ?? (() => performance.now());
  const toolMap = agentToolMap(options.tools);
  const validate = options.validateArguments ?? validateToolArguments;
  const validateOptions = { maxBytes: limits.maxArgumentsBytes };
  const scheduler = createCallScheduler();
  const highWaterMark = Math.max(1, Math.min(EMIT_HIGH_WATER_MARK, Math.floor(limits.maxQueuedEvents / 2)));
  const queue = createEventQueue<TurnEvent>({ highWaterMark });
  const deadlines = createDeadlineTimer({ now });
  // Every call id of the turn (duplicates are refused), with the call while it runs and
  // `undefined` once it settled. Entries are overwritten, never deleted: a Map that takes and drops
  // an entry per call rehashes every few calls, and each dead table V8 leaves behind points at the
  // next one and at the calls it held, so a turn's finished calls survived young-generation GCs
  // and were promoted (about 1 KB a call, a third of the in-process path's time spent in GC).
  const calls = new Map<string, RunningCall | typeof STARTING | undefined>();
  let running = 0;
  const clientRequests = options.clientRequests ?? createClientRequests({ limits });
  const needsApproval = approvalRule(options.approvalPolicy);
  let inputEnded = false;
  let aborted = false;
  let abortReason = 'the turn ended';

  const push = (event: TurnEvent) => queue.push(event);
  const output: CallOutput = {
    push,
    get hasRoom() {
      return queue.length < highWaterMark;
    },
    room: (signal) => queue.room(signal),
  };
  const runningCall = (callId: string): RunningCall | undefined => {
    const call = calls.get(callId);
    return call === STARTING ? undefined : call;
  };
  const maybeEnd = () => {
    if ((inputEnded || aborted) && running === 0) {
      deadlines.clear();
      queue.end();
    }
  };
  const onSettled = (callId: string) => {
    calls.set(callId, undefined);
    running--;
    clientRequests.callEnded(callId);
    maybeEnd();
  };
  const take = () => {
    const event = queue.take();
    if (event?.type === 'presentation') runningCall(event.callId)?.presentationSent();
    return event;
  };
  const events: TurnEventSource = {
    take,
    readable: (signal) => queue.readable(signal),
    whenReadable: (callback) => queue.whenReadable(callback),
    get done() {
      return queue.ended && queue.length === 0;
    },
    async *[Symbol.asyncIterator]() {
      const never = new AbortController().signal;
      for (;;) {
        const event = take();
        if (event !== undefined) yield event;
        else if (queue.ended) return;
        else await queue.readable(never);
      }
    },
  };
  clientRequests.attach(push, (callId) => calls.get(callId) !== undefined);
  const fail = (callId: string, code: Parameters<typeof errorResult>[0]['code'], message: string, repairs?: string[]) =>
    push({ type: 'result', callId, result: errorResult({ code, message, repairs }) });

  return {
    events,
    get activeCalls() {
      return running;
    },
    call(request) {
      const { callId } = request;
      if (inputEnded || aborted) return;
      const refusal = checkCallRequest(request);
      if (refusal) {
        fail(callId, refusal.code, refusal.message);
        return;
      }
      if (calls.has(callId)) {
        fail(callId, 'duplicate_call_id', `call_id ${quotePrefix(callId)} was already used in this turn; every call needs its own id.`);
        return;
      }
      calls.set(callId, undefined);
      if (running >= limits.maxConcurrentCallsPerTurn) {
        fail(
          callId,
          'too_many_calls',
          `this turn already has ${running} calls in flight (the limit is ${limits.maxConcurrentCallsPerTurn}); wait for some results and call again.`,
        );
        return;
      }
      const tool = toolMap.get(toolKey(request.name, request.namespace || undefined));
      if (!tool) {
        const shown = request.namespace ? `${request.namespace}.${request.name}` : request.name;
        fail(callId, 'unknown_tool', `there is no tool named ${quotePrefix(shown)} in this turn; call one of the tools you were given.`);
        return;
      }
      const validation = validate(tool, request.argumentsJson, validateOptions);
      // The validator's own fresh array (repair steps are strings): nothing to copy.
      const repairs: string[] = validation.repairs;
      if (!validation.ok) {
        fail(callId, validation.error.code, validation.error.message, repairs);
        return;
      }
      const params = validation.value;
      const approve = needsApproval(tool) || tool.alwaysAsks?.(params) === true
        ? (label: string, signal: AbortSignal) =>
            clientRequests.approve(
              callId,
              {
                toolName: tool.name,
                namespace: tool.namespace ?? '',
                label,
                parametersJson: safeJsonStringify(params),
                readOnly: tool.isReadOnly,
                destructive: tool.isDestructive,
              },
              signal,
            )
        : undefined;
      const requested = request.deadlineMs > 0 ? request.deadlineMs : limits.defaultCallDeadlineMs;
      // Live from here: `execute` may start (and ask the client) before executeCall returns.
      calls.set(callId, STARTING);
      running++;
      const call = executeCall({
        callId,
        tool,
        params,
        repairs,
        approve,
        deadlineMs: Math.min(requested, limits.maxCallDeadlineMs),
        ticket: scheduler.enter(tool.executionMode),
        limits,
        logger,
        now,
        output,
        deadlines,
        onSettled,
      });
      // The result is pushed in a later microtask at the earliest, so the call is still running.
      calls.set(callId, call);
    },
    reply(requestId, reply, sizeBytes) {
      if (!clientRequests.reply(requestId, reply, sizeBytes)) logger.debug('a client reply answered no waiting request', { ...options.logFields, requestId });
    },
    cancel(callId, given) {
      const reason = boundCancelReason(given);
      runningCall(callId)?.abort('aborted', reason ? `the call was cancelled: ${reason}` : 'the call was cancelled');
    },
    endInput() {
      inputEnded = true;
      // A half-closed client cannot send a reply: its calls' questions fail now, not at their deadline.
      clientRequests.close('the client closed its side of the turn stream, so it can no longer answer');
      maybeEnd();
    },
    abort(reason) {
      if (reason) abortReason = reason;
      aborted = true;
      if (running > 0) {
        const active: RunningCall[] = [];
        for (const call of calls.values()) if (call !== undefined && call !== STARTING) active.push(call);
        for (const call of active) call.abort('aborted', abortReason);
        logger.debug('turn aborted with calls running', { ...options.logFields, calls: running });
      }
      maybeEnd();
    },
  };
}

/** A call accepted whose `executeCall` has not returned yet. */
const STARTING = Symbol('starting');

/** The policy as a test on a tool: true when its calls must be approved first. */
function approvalRule(policy: ApprovalPolicy | undefined): (tool: WorkerAgentTool) => boolean {
  switch (policy?.mode) {
    case 'destructive':
      return (tool) => tool.isDestructive;
    case 'not_read_only':
      return (tool) => !tool.isReadOnly;
    case 'listed': {
      const names = new Set(policy.toolNames);
      return (tool) => names.has(toolKey(tool.name, tool.namespace));
    }
    default:
      return () => false;
  }
}
