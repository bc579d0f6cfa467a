import type { z } from 'zod';
import type { JSONObject } from '../json.js';
import type { AgentToolResult, PresentationEvent } from './tool-result.js';

/** Whether a tool can run alongside others in the same model response. */
export type ExecutionMode = 'parallel' | 'sequential';

/** The provider tools a sidecar tool can stand for (see WorkerAgentTool.nativeTool). */
export type NativeToolKind = 'apply_patch' | 'shell';

/** What `execute` gets besides its validated params. */
export interface ToolExecutionContext {
  /**
   * Aborted when the call is cancelled, runs past its deadline, or its turn ends. A tool must stop
   * its work (and its child processes) when it fires.
   */
  signal: AbortSignal;
  /** The model's call id. */
  callId: string;
  /**
   * Milliseconds left before the call's deadline, past which its result is `timeout` whatever the
   * tool returns. A tool that waits for something it could report on instead (an index still being
   * built) answers before it. Absent where no deadline applies (a tool called directly).
   */
  remainingMs?(): number;
  /**
   * Sends a presentation event while the tool runs; delivered in order, before the result.
   *
   * The returned promise resolves when the turn's outgoing queue has room for more (at once,
   * usually). A tool that emits in a loop should `await` it, so it goes at the pace the client
   * reads. Ignoring it is fine for a few events, but the sidecar bounds what one call may have
   * waiting (`maxQueuedEvents`, 10,000 by default): past that the call is aborted and its result
   * is a `tool_failed` error saying it emitted faster than the client reads. The promise never
   * rejects; it resolves at once when the call is aborted, so check `signal` in such loops.
   * Events emitted after the call's result was decided are dropped.
   */
  emit(event: PresentationEvent): Promise<void>;
}

/**
 * A tool the runtime can offer to the model and execute: the seed's WorkerAgentTool contract.
 * Build one with `defineWorkerTool`, which checks it and fills the defaults.
 */
export interface WorkerAgentTool<TParams = any> {
  /** The name the model sees and calls (`^[a-zA-Z0-9_-]{1,64}$`). */
  readonly name: string;
  /** What the tool does: the model reads it to decide whether to call. */
  readonly description: string;
  /** The input parameters, validated before `execute` runs. */
  readonly schema?: z.ZodType;
  /** A raw JSON Schema used instead of one generated from `schema`; sent unchanged. */
  readonly jsonSchema?: JSONObject;
  /** Ask the provider to enforce strict function-tool arguments. */
  readonly strict: boolean;
  /** Why the tool is not strict although it would be (a runtime schema strict mode cannot represent). */
  readonly strictNote?: string;
  /** Groups related tools under one provider namespace. */
  readonly namespace?: string;
  readonly namespaceDescription?: string;
  /** Keep the schema behind tool search until selected. */
  readonly deferLoading: boolean;
  /**
   * A JSON Schema (root object) of the structured value the tool returns as its one `json` content
   * part; served to MCP clients as the tool's `outputSchema`, with that value as `structuredContent`.
   */
  readonly outputSchema?: JSONObject;
  /** Default `sequential`: the safe choice. */
  readonly executionMode: ExecutionMode;
  readonly isReadOnly: boolean;
  readonly isDestructive: boolean;
  /**
   * Running it again with the same params changes nothing more than the first run did. A turn that
   * resumes after its runner died runs such a call again when it was in flight (as it does read-only
   * ones); any other call then gets "interrupted: ... may or may not have taken effect".
   */
  readonly isIdempotent?: boolean;
  /** A short human-readable label from the validated params, for progress. */
  describeActivity(params: TParams): string;
  /** Replaces the label with a result summary when the tool finishes. */
  describeCompletedActivity?(params: TParams, result: AgentToolResult): string;
  /**
   * True for a call that must be approved by the client whatever the turn's approval policy says
   * (run_command asking to run outside the sandbox). A client that cannot answer gets it denied.
   */
  alwaysAsks?(params: TParams): boolean;
  /**
   * The provider's own tool this tool executes (the Responses API's `apply_patch` or `shell`): a
   * client that offers the provider's tool instead of this function sends the provider's calls
   * here. `apply_patch` takes `{ patch }` (V4A text); `shell` takes `{ command, timeout_ms }` and
   * streams `command.output` events. Absent for ordinary tools.
   */
  readonly nativeTool?: NativeToolKind;
  /** Runs the tool on validated params. Throwing yields a `tool_failed` error result. */
  execute(params: TParams, context: ToolExecutionContext): Promise<AgentToolResult>;
}

/** Any tool, whatever its params. */
export type AnyWorkerAgentTool = WorkerAgentTool<any>;
