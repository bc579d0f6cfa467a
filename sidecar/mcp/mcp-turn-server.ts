import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { errorMessage, headOf, type Logger, type PresentationEvent, type WorkerAgentTool } from '../../src/index.js';
import { toolKey } from '../../src/schema/collect-tool-schemas.js';
import { assembleToolSet, type ApprovalPolicy, type Catalogs, type TurnContext } from '../categories/category.js';
import type { SidecarConfig } from '../sidecar-config.js';
import { createTurnSession, type TurnSession } from '../turn/turn-session.js';
import type { ApprovalRequestInfo, TurnEvent } from '../turn/turn-event.js';
import { fromMcpToolName, toMcpCallResult, toMcpTool } from './mcp-tool-listing.js';

/** How the sidecar serves MCP: which agent a session acts as, and which calls need approval. */
export interface McpServeOptions {
  catalogs: Catalogs;
  config: SidecarConfig;
  logger: Logger;
  /** The agent every MCP session acts as (`--mcp-agent`). */
  agentId: string;
  /** Which calls need approval (`--mcp-approve`); asked through elicitation, else denied. */
  approvalPolicy: ApprovalPolicy;
}

/** One MCP session's server: an SDK `Server` whose calls run in one long text turn. */
export interface McpTurnServer {
  readonly server: Server;
  /** Ends the turn: aborts its running calls (their processes too). Idempotent. */
  close(reason?: string): void;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * One call waiting for its result. A class that is its own abort listener (`handleEvent`) rather
 * than closures made per call: a no-op call's p50 went from 1.3× to about 1.1× of the SDK's own
 * server with it and the callback-driven pump below (bench: mcp).
 */
class PendingCall {
  progress = 0;
  readonly promise: Promise<CallToolResult>;
  private resolve!: (result: CallToolResult) => void;

  constructor(
    readonly session: TurnSession,
    readonly callId: string,
    readonly tool: WorkerAgentTool | undefined,
    readonly extra: Extra,
    readonly progressToken: string | number | undefined,
  ) {
    this.promise = new Promise<CallToolResult>((resolve) => (this.resolve = resolve));
    extra.signal.addEventListener('abort', this, { once: true });
  }

  /** The request was cancelled (notifications/cancelled, or the session closed). */
  handleEvent(): void {
    this.session.cancel(this.callId, 'the MCP client cancelled the request');
  }

  settle(result: CallToolResult): void {
    this.extra.signal.removeEventListener('abort', this);
    this.resolve(result);
  }
}

interface OpenedTurn {
  /** The session calls go to now (a fresh one after ROTATE_AFTER_CALLS, see below). */
  session: TurnSession;
  /** Calls sent to `session`. */
  calls: number;
  tools: Map<string, WorkerAgentTool>;
  listing: Tool[];
  makeSession(): TurnSession;
}

/**
 * A TurnSession remembers every call id it was given (duplicates are refused), so a session that
 * lives for days would grow without end. After this many calls, at a moment when none runs (so the
 * scheduling rules never straddle two sessions), later calls go to a fresh session over the same
 * tools.
 */
const ROTATE_AFTER_CALLS = 10_000;

/** Longest progress message sent for one presentation event. */
const MAX_PROGRESS_MESSAGE_CHARS = 2_000;

/**
 * Creates the server of one MCP session. The session is one long TEXT turn of `agentId` (turn id
 * `mcp-<label>`), assembled from the text catalog at the session's first request: `tools/list`
 * answers that turn's tools, and `tools/call` sends a call into its `TurnSession`, so a call gets
 * what a Turn call gets (argument repair and validation, the read/write scheduling, deadlines,
 * approvals, the tools' own confinement). Presentation events and the activity label become
 * `notifications/progress` when the client sent a `progressToken`; the request's cancellation
 * cancels the call; every failure is a result with `isError: true`. An approval the policy asks
 * for goes to the client as an elicitation when it declared that capability; without it, the
 * call is denied (never run unasked).
 */
export function createMcpTurnServer(options: McpServeOptions & { label: string; version?: string; rotateAfterCalls?: number }): McpTurnServer {
  const rotateAfterCalls = options.rotateAfterCalls ?? ROTATE_AFTER_CALLS;
  const { config, logger } = options;
  const server = new Server({ name: 'tools-runtime-sidecar', version: options.version ?? '0.1.0' }, { capabilities: { tools: {} } });
  const turnAbort = new AbortController();
  const logFields = { agentId: options.agentId, turnId: `mcp-${options.label}` };
  const pending = new Map<string, PendingCall>();
  let nextCall = 0;
  let opened: Promise<OpenedTurn> | undefined;
  // The opened turn once it is: a call then starts in the handler's own tick, with no await.
  let ready: OpenedTurn | undefined;
  let closed = false;

  const open = async (): Promise<OpenedTurn> => {
    const turn: TurnContext = {
      agentId: options.agentId,
      turnId: logFields.turnId,
      kind: 'text',
      enabledSkills: [],
      canSpawnJobs: false,
      brainEnabled: false,
      resultSchemaJson: '',
      labels: { via: 'mcp' },
      controlPlane: false,
      approvalPolicy: options.approvalPolicy,
    };
    const assembled = await assembleToolSet(options.catalogs, { turn, config, signal: turnAbort.signal });
    const makeSession = () => {
      const session = createTurnSession({ tools: assembled.tools, limits: config.limits, logger, logFields, approvalPolicy: options.approvalPolicy });
      pump(session);
      return session;
    };
    const session = makeSession();
    if (closed) session.abort('the MCP session ended');
    logger.info('mcp turn opened', { ...logFields, tools: assembled.tools.length });
    ready = {
      session,
      calls: 0,
      makeSession,
      tools: new Map(assembled.tools.map((tool) => [toolKey(tool.name, tool.namespace), tool])),
      listing: assembled.tools.map(toMcpTool),
    };
    return ready;
  };
  const turn = () => {
    opened ??= open().catch((error: unknown) => {
      opened = undefined; // the next request tries again
      throw error;
    });
    return opened;
  };

  // Drained by callback, as the gRPC writer does, rather than `for await`: no promise per event
  // (see PendingCall for what it saved; bench: mcp).
  const pump = (session: TurnSession) => {
    const { events } = session;
    const drain = () => {
      for (let event = events.take(); event !== undefined; event = events.take()) route(session, event);
      if (!events.done) events.whenReadable(drain);
    };
    drain();
  };
  const route = (session: TurnSession, event: TurnEvent) => {
    const call = pending.get(event.callId);
    if (!call) return;
    switch (event.type) {
      case 'activity-started':
        return progress(call, event.label);
      case 'presentation':
        return progress(call, progressMessage(event.event));
      case 'client-request':
        if (event.request.kind === 'approval') void approve(session, call, event.requestId, event.request.approval);
        else session.reply(event.requestId, undefined, 0); // no control plane here: refused at once
        return;
      case 'result':
        pending.delete(event.callId);
        return call.settle(toMcpCallResult(event.result, call.tool));
    }
  };
  const progress = (call: PendingCall, message: string) => {
    if (call.progressToken === undefined) return;
    call.progress += 1;
    call.extra
      .sendNotification({ method: 'notifications/progress', params: { progressToken: call.progressToken, progress: call.progress, message } })
      .catch((error: unknown) => logger.debug('an MCP progress notification was not sent', { ...logFields, error: errorMessage(error) }));
  };
  const approve = async (session: TurnSession, call: PendingCall, requestId: string, approval: ApprovalRequestInfo) => {
    const name = toolKey(approval.toolName, approval.namespace || undefined);
    if (!server.getClientCapabilities()?.elicitation) {
      const reason = `the MCP client cannot be asked (it did not declare the elicitation capability), and the sidecar's approval policy (${options.approvalPolicy.mode}) needs an approval for ${name}`;
      session.reply(requestId, { kind: 'approval', approved: false, reason }, 0);
      return;
    }
    try {
      const answer = await call.extra.sendRequest(
        {
          method: 'elicitation/create',
          params: {
            message: `Allow ${name}: ${approval.label}?\nParameters: ${headOf(approval.parametersJson, 4_000)}${approval.destructive ? '\n(The tool may change or delete things.)' : ''}`,
            requestedSchema: { type: 'object', properties: {} },
          },
        },
        ElicitResultSchema,
        { signal: call.extra.signal, timeout: config.limits.maxCallDeadlineMs },
      );
      const approved = answer.action === 'accept';
      session.reply(requestId, { kind: 'approval', approved, reason: approved ? '' : `the MCP client's user answered ${answer.action}` }, 0);
    } catch (error) {
      session.reply(requestId, { kind: 'approval', approved: false, reason: `the approval could not be asked: ${errorMessage(error)}` }, 0);
    }
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (await turn()).listing }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const opened = ready ?? (await turn());
    if (++opened.calls > rotateAfterCalls && opened.session.activeCalls === 0 && !closed) {
      opened.session.endInput();
      opened.session = opened.makeSession();
      opened.calls = 1;
      logger.debug('mcp turn session renewed', { ...logFields, after: rotateAfterCalls });
    }
    const { session, tools } = opened;
    const { namespace, name } = fromMcpToolName(request.params.name);
    const callId = `mcp-${++nextCall}`;
    const call = new PendingCall(session, callId, tools.get(toolKey(name, namespace || undefined)), extra, request.params._meta?.progressToken);
    pending.set(callId, call);
    session.call({ callId, name, namespace, argumentsJson: JSON.stringify(request.params.arguments ?? {}), deadlineMs: 0 });
    return call.promise;
  });

  return {
    server,
    close(reason = 'the MCP session ended') {
      if (closed) return;
      closed = true;
      turnAbort.abort();
      void opened?.then(({ session }) => session.abort(reason), () => undefined);
      void server.close().catch(() => undefined);
    },
  };
}

/** A presentation event as one progress line: its text when it carries one, else kind and JSON. */
function progressMessage(event: PresentationEvent): string {
  const payload = event.payload as { text?: unknown } | undefined;
  const text = typeof payload?.text === 'string' ? payload.text : `${event.kind} ${JSON.stringify(event.payload) ?? ''}`;
  return text.length > MAX_PROGRESS_MESSAGE_CHARS ? `${headOf(text, MAX_PROGRESS_MESSAGE_CHARS)}…` : text;
}
