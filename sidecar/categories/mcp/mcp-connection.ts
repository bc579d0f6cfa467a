import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResultSchema, ErrorCode, McpError, ToolListChangedNotificationSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage, ToolRuntimeError, type Logger } from '../../../src/index.js';
import type { CategoryConfig } from '../category-config.js';
import { commandEnv } from '../computer/command-env.js';
import type { McpServerSpec } from './mcp-servers-file.js';
import { reportMcpServerStatus } from './mcp-server-status.js';
import { ProcessTransport } from './process-transport.js';
import { startMcpServerProcess } from './start-mcp-server-process.js';

/** Bounds of a connection; the defaults suit a server started by `npx`. */
export interface McpConnectionTimings {
  /** Connecting (initialize) and one tools/list page may take this long. Default 30,000 ms. */
  connectTimeoutMs: number;
  /** The first restart waits this long, doubling up to `maxBackoffMs`. Default 1,000 ms. */
  backoffMs: number;
  /** Default 30,000 ms. */
  maxBackoffMs: number;
}

const defaultTimings: McpConnectionTimings = { connectTimeoutMs: 30_000, backoffMs: 1_000, maxBackoffMs: 30_000 };

/** The most tools/list pages followed (a server that pages forever is cut there). */
const MAX_LIST_PAGES = 20;

/** A listing of a server's tools; a new array (a new generation) each time it is read again. */
export type McpToolListing = readonly Tool[];

/**
 * One mounted MCP server for the sidecar's lifetime: connects at `start()`, keeps its tool listing
 * (read again after `notifications/tools/list_changed`), and restarts with exponential backoff when
 * the server dies, fails to start, or hangs (a call past its timeout stops the server; the next
 * connection starts fresh). Calls made while it is down fail at once with the reason.
 */
export class McpConnection {
  private client: Client | undefined;
  /** The client of the newest connection, connecting or up: only its failure counts. */
  private current: Client | undefined;
  private transport: Transport | undefined;
  /** The start of the current stdio server's stderr: its first error line is the one that explains. */
  private stderrHead = '';
  private connecting: Promise<void> | undefined;
  private listing: McpToolListing = [];
  private stale = false;
  private refreshing: Promise<void> | undefined;
  private lastError = 'it has not connected yet';
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryAt = 0;
  private closed = false;
  private readonly timings: McpConnectionTimings;

  constructor(
    readonly spec: McpServerSpec,
    private readonly options: { config: CategoryConfig; logger: Logger; timings?: Partial<McpConnectionTimings> },
  ) {
    this.timings = { ...defaultTimings, ...options.timings };
  }

  /** Starts connecting (once); later calls do nothing. */
  start(): void {
    if (!this.connecting && !this.client && !this.retryTimer && !this.closed) this.connecting = this.connect();
  }

  /** True while connected. */
  get up(): boolean {
    return this.client !== undefined;
  }

  /**
   * The server's tools: the cached listing at once when it is fresh; otherwise waits for the
   * connection or the new listing for at most `waitMs` (or until `signal`), then answers what it
   * has (the previous listing, or none when it never listed). Never throws.
   */
  async tools(signal: AbortSignal, waitMs: number): Promise<McpToolListing> {
    this.start();
    if (this.client && this.stale) this.refreshing ??= this.refresh();
    const waiting = this.client ? this.refreshing : this.connecting;
    if (waiting) await boundedWait(waiting, waitMs, signal);
    return this.listing;
  }

  /**
   * Calls one tool. Progress notifications go to `onProgress`; `signal` cancels the call (the
   * server gets `notifications/cancelled`).
   *
   * @throws ToolRuntimeError `tool_failed` naming the server and why when it is down, dies during
   *   the call, or does not answer within the server's `timeoutMs` (reset by progress; the server is
   *   then restarted); the signal's reason when it aborts.
   */
  async call(
    name: string,
    args: Record<string, unknown>,
    options: { signal: AbortSignal; onProgress?: (progress: { progress: number; total?: number; message?: string }) => void },
  ): Promise<CallToolResult> {
    const client = this.client;
    if (!client) throw this.unavailable();
    try {
      return (await client.callTool({ name, arguments: args }, CallToolResultSchema, {
        signal: options.signal,
        timeout: this.spec.timeoutMs,
        resetTimeoutOnProgress: true,
        maxTotalTimeout: this.options.config.limits.maxCallDeadlineMs,
        ...(options.onProgress ? { onprogress: options.onProgress } : {}),
      })) as CallToolResult;
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason;
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        this.fail(client, `it did not answer a call of ${name} within ${this.spec.timeoutMs} ms`);
        throw new ToolRuntimeError('tool_failed', `the MCP server "${this.spec.name}" did not answer within ${this.spec.timeoutMs} ms; it is being restarted`);
      }
      if (this.client !== client) throw new ToolRuntimeError('tool_failed', `the MCP server "${this.spec.name}" stopped during the call: ${this.lastError}`);
      throw new ToolRuntimeError('tool_failed', `the MCP server "${this.spec.name}" answered with an error: ${errorMessage(error)}`);
    }
  }

  /** Stops the server (its process group for a stdio server) and any restart. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const transport = this.transport;
    this.client = undefined;
    this.transport = undefined;
    await transport?.close().catch(() => undefined);
  }

  private unavailable(): ToolRuntimeError {
    const when = this.retryTimer ? `; the next restart is in ${Math.max(0, Math.ceil((this.retryAt - Date.now()) / 1_000))} s` : '; it is (re)connecting';
    return new ToolRuntimeError('tool_failed', `the MCP server "${this.spec.name}" is unavailable: ${this.lastError}${when}. Try again later or use other tools.`);
  }

  private async connect(): Promise<void> {
    const { spec, options } = this;
    const client = new Client({ name: 'tools-runtime-sidecar', version: '0.1.0' }, { capabilities: {} });
    // From here on, a late close of an older connection (a server slow to die on SIGTERM) is not
    // this one's failure: it must not close this connection's transport (issue 36, item 3).
    this.current = client;
    this.stderrHead = '';
    let transport: Transport | undefined;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      this.stale = true;
    });
    try {
      if (spec.transport === 'stdio') {
        const env = commandEnv({ allowList: options.config.commandEnvAllowList, extra: { ...options.config.commandEnv, ...spec.env } });
        const started = await startMcpServerProcess({ config: options.config, command: spec.command, args: spec.args, cwd: spec.cwd ?? options.config.workspace, env });
        started.child.stderr.on('data', (chunk: Buffer) => {
          if (this.current === client && this.stderrHead.length < STDERR_HEAD_CHARS) this.stderrHead += chunk.toString('utf8');
        });
        transport = new ProcessTransport(started);
      } else {
        transport = new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers } });
      }
      if (this.closed) throw new Error('closed while starting');
      this.transport = transport;
      const opened = transport;
      client.onclose = () => this.fail(client, this.exitReason(opened, 'the connection closed'));
      await client.connect(transport, { timeout: this.timings.connectTimeoutMs });
      if (this.closed) throw new Error('closed while connecting');
      this.client = client;
      await this.list(client);
      this.failures = 0;
      options.logger.info('mcp server connected', { server: spec.name, tools: this.listing.length });
      reportMcpServerStatus({ name: spec.name, up: true });
    } catch (error) {
      if (transport && !this.transport) void transport.close().catch(() => undefined);
      this.fail(client, this.exitReason(transport, `it could not be started: ${errorMessage(error)}`));
    } finally {
      this.connecting = undefined;
    }
  }

  private exitReason(transport: Transport | undefined, fallback: string): string {
    if (!(transport instanceof ProcessTransport)) return fallback;
    const tail = transport.stderrTail.trim().split('\n').slice(-3).join(' | ');
    // The first error line says why (`Cannot find module ...`); the tail is often only the runtime's
    // version line. With a likely cause, a server that fails in the sandbox is not silently missing.
    const first = firstErrorLine(this.stderrHead);
    const cause = first ? likelyCause(first) : undefined;
    const parts = [
      ...(first ? [`its first error: ${first.slice(0, 300)}`] : []),
      ...(cause ? [`likely cause: ${cause}`] : []),
      ...(tail ? [`its stderr ends: ${tail.slice(-500)}`] : []),
    ];
    return parts.length > 0 ? `${fallback} (${parts.join('; ')})` : fallback;
  }

  private async list(client: Client): Promise<void> {
    this.stale = false;
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const answer = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.timings.connectTimeoutMs });
      tools.push(...answer.tools);
      cursor = answer.nextCursor;
      if (!cursor) break;
    }
    if (this.client === client) this.listing = tools;
  }

  private async refresh(): Promise<void> {
    const client = this.client;
    try {
      if (client) await this.list(client);
    } catch (error) {
      this.stale = true;
      this.options.logger.warn('mcp server tools could not be listed again', { server: this.spec.name, error: errorMessage(error) });
    } finally {
      this.refreshing = undefined;
    }
  }

  /** The connection of `client` failed: drop it, stop the server, schedule a restart. */
  private fail(client: Client, reason: string): void {
    if (this.closed || client !== this.current) return;
    const wasUp = this.client === client;
    this.client = undefined;
    const transport = this.transport;
    this.transport = undefined;
    void transport?.close().catch(() => undefined);
    if (this.retryTimer) return;
    this.lastError = reason;
    const delay = Math.min(this.timings.maxBackoffMs, this.timings.backoffMs * 2 ** this.failures);
    this.failures++;
    this.retryAt = Date.now() + delay;
    // An error, not a warning: the server's tools are missing from every turn until it comes back.
    this.options.logger.error('mcp server down; restarting', { server: this.spec.name, reason, wasUp, retryInMs: delay });
    reportMcpServerStatus({ name: this.spec.name, up: false, reason });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.start();
    }, delay);
    this.retryTimer.unref();
  }
}

/** How much of a stdio server's stderr is kept from its start. */
const STDERR_HEAD_CHARS = 4_000;

/** The first line of `text` that reads as an error, if any. */
export function firstErrorLine(text: string): string | undefined {
  return text
    .split('\n')
    .map((line) => line.trim())
    .find((line) => /error|cannot|can't|not found|no such file|denied|EACCES|ENOENT|EROFS|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|fatal|traceback|exception/i.test(line));
}

/** What a server's first error line most likely means under the sidecar's sandbox, if we can tell. */
export function likelyCause(line: string): string | undefined {
  if (/cannot find module|no such file|ENOENT|not found/i.test(line)) {
    return 'a file or command it needs is not visible inside the sandbox (the sandbox has its own empty /tmp, and --hide paths are hidden) or is not installed; keep the server\'s files outside /tmp and outside hidden paths';
  }
  if (/EROFS|read-only file system|EACCES|permission denied/i.test(line)) {
    return 'it writes outside the workspace, which the sandbox mounts read-only (--sandbox workspace-write writes the workspace only)';
  }
  if (/ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ENETUNREACH|network/i.test(line)) {
    return 'it needs the network, which the sandbox turns off by default (--network on, or allow:HOST)';
  }
  return undefined;
}

/** Waits for `promise` at most `ms`, or until `signal`; never rejects. */
async function boundedWait(promise: Promise<unknown>, ms: number, signal: AbortSignal): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  await Promise.race([
    promise.catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      onAbort = () => resolve();
      signal.addEventListener('abort', onAbort, { once: true });
    }),
  ]);
  clearTimeout(timer);
  if (onAbort) signal.removeEventListener('abort', onAbort);
}
