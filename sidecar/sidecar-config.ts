import type { BrainLimits } from './categories/brain/brain-protocol.js';
import type { McpServerSpec } from './categories/mcp/mcp-servers-file.js';
import type { SandboxSettings } from './categories/computer/sandbox/sandbox-policy.js';

/**
 * The sidecar's configuration: what the CLI flags (or an embedding program) set. Categories read
 * the parts that concern them; a category whose part is absent offers no tools.
 */

/** Bounds on everything a turn can make the sidecar hold or wait for. */
export interface SidecarLimits {
  /** Largest gRPC message either way, in bytes. */
  maxMessageBytes: number;
  /** Largest `arguments_json` accepted, in bytes (larger fails with `arguments_too_large`). */
  maxArgumentsBytes: number;
  /** Longest text part of a result, in characters; longer text is cut head and tail, saying how much. */
  maxResultTextChars: number;
  /** A call's deadline when the client gives none, in milliseconds. */
  defaultCallDeadlineMs: number;
  /** The longest deadline a client may ask for, in milliseconds. */
  maxCallDeadlineMs: number;
  /** Calls of one turn that may be in flight (running or waiting) at once. */
  maxConcurrentCallsPerTurn: number;
  /** How long an aborted tool may take to settle before its `aborted` result is sent anyway. */
  abortGraceMs: number;
  /** On SIGTERM, how long running calls may go on before they are aborted. */
  drainGraceMs: number;
  /**
   * Presentation events one call may have waiting to be sent (the client reads slower than the
   * tool emits). A call past it is aborted with `tool_failed`; tools that await `emit` never get
   * near it.
   */
  maxQueuedEvents: number;
  /** Reverse requests (control, approval) one call may send to the client in all. */
  maxClientRequestsPerCall: number;
  /** Reverse requests of one turn that may wait for a reply at once. */
  maxPendingClientRequestsPerTurn: number;
  /** Largest control request sent, or client reply accepted, in bytes. */
  maxClientMessageBytes: number;
}

export const defaultSidecarLimits: SidecarLimits = {
  maxMessageBytes: 16 * 1024 * 1024,
  maxArgumentsBytes: 1024 * 1024,
  maxResultTextChars: 100_000,
  defaultCallDeadlineMs: 10 * 60_000,
  maxCallDeadlineMs: 60 * 60_000,
  maxConcurrentCallsPerTurn: 256,
  abortGraceMs: 2_000,
  drainGraceMs: 10_000,
  maxQueuedEvents: 10_000,
  maxClientRequestsPerCall: 32,
  maxPendingClientRequestsPerTurn: 64,
  maxClientMessageBytes: 1024 * 1024,
};

/** The web_fetch profile; web_fetch is offered only when it is set. */
export interface WebFetchProfile {
  /** Allow private, loopback and link-local addresses (refused by default). */
  allowPrivateNetwork: boolean;
  maxRedirects: number;
  /** Largest response body read, in bytes. */
  maxBytes: number;
  timeoutMs: number;
  userAgent: string;
}

/** The web_search provider; web_search is offered only when it is set. */
export interface WebSearchProfile {
  provider: 'searxng' | 'brave';
  /** The SearXNG instance's base URL, or the Brave API endpoint (its default when empty). */
  url: string;
  /** Brave's subscription token. */
  apiKey?: string;
  timeoutMs: number;
  maxResults: number;
  /** Allow a provider URL on a private or loopback address (a self-hosted SearXNG). */
  allowPrivateNetwork: boolean;
}

export interface SidecarConfig {
  /** Absolute path of the agent's workspace: every file path and command runs inside it. */
  workspace: string;
  /** Absolute path of a folder for the sidecar's own state (todo lists, indexes, mcporter config). */
  stateDir: string;
  /** Variables added to the environment of commands, over the allow-listed ones of the sidecar's own. */
  commandEnv: Record<string, string>;
  /** Names of the sidecar's own environment variables that commands inherit. */
  commandEnvAllowList: string[];
  webFetch?: WebFetchProfile;
  webSearch?: WebSearchProfile;
  /** Folder of markdown pages for the Brain tools; Brain is absent when unset. */
  brainDir?: string;
  /** The Brain's caps (page count, page size, total bytes); defaults where unset. */
  brainLimits?: Partial<BrainLimits>;
  /** Folder of skills (each a folder with SKILL.md); no skills when unset. */
  skillsDir?: string;
  /** MCP servers whose tools join text turns (`--mcp-servers FILE`), one namespace each, deferred. */
  mcpServers?: McpServerSpec[];
  limits: SidecarLimits;
  /**
   * The sandbox every process started for the model runs in, and the file tools obey (`--sandbox`,
   * `--network`, `--hide`). Unset: `workspace-write`, network off, the state folder hidden.
   */
  sandbox?: SandboxSettings;
}

/** The variables a command inherits from the sidecar when nothing else is configured. */
export const defaultCommandEnvAllowList = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TERM', 'TMPDIR', 'TZ', 'USER', 'SHELL', 'NODE_OPTIONS'];
