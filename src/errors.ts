/**
 * The one error family of the runtime. Every error carries a `code`; what the model caused becomes
 * an error *result* with that code, and only client misuse becomes a gRPC status (mapped in
 * `sidecar/grpc/`).
 */
export type ToolRuntimeErrorCode =
  /** A tool definition is wrong (bad name, empty description, non-object schema...). */
  | 'invalid_definition'
  /** Two tools share a namespace and name. */
  | 'duplicate_tool'
  /** The model's arguments could not be parsed or did not match the schema. */
  | 'invalid_arguments'
  /** The model's arguments are over the size cap. */
  | 'arguments_too_large'
  /** No tool by that name (and namespace) in this turn. */
  | 'unknown_tool'
  /** A call id was used twice in one turn. */
  | 'duplicate_call_id'
  /** The tool threw. */
  | 'tool_failed'
  /** The call ran past its deadline. */
  | 'timeout'
  /** The call was cancelled, or the turn ended under it. */
  | 'aborted'
  /** The client refused to approve the call; nothing of the tool ran. */
  | 'denied'
  /** The turn has too many calls in flight. */
  | 'too_many_calls'
  /** A command session named by the call is not this agent's (unknown, forgotten, or another agent's). */
  | 'session_not_found'
  /** Input was sent to a command session whose command has exited; its exit code and last output come back. */
  | 'session_ended'
  /** The agent (or the sidecar) has as many running command sessions as allowed. */
  | 'session_limit_reached'
  /** Input for a command session is over its byte bound; nothing was sent. */
  | 'input_too_large'
  /** A wrong request from a client (not the model). */
  | 'invalid_request'
  /** The model provider failed. */
  | 'model_error'
  /** The sidecar is unreachable or died. */
  | 'sidecar_unavailable'
  /**
   * A tool that starts processes cannot confine them as the sidecar's `--sandbox` asks (no
   * bubblewrap, user namespaces refused): nothing ran. The message names the cause and the fix.
   */
  | 'sandbox_unavailable'
  /** The sandbox's policy forbids what the call asked (a write under `read-only`, a hidden path). */
  | 'sandbox_denied'
  /** A bug or an unexpected state. */
  | 'internal';

/** An error with a stable code; `cause` keeps the original error. */
export class ToolRuntimeError extends Error {
  override readonly name = 'ToolRuntimeError';
  readonly code: ToolRuntimeErrorCode;

  constructor(code: ToolRuntimeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** True when `error` is a ToolRuntimeError, optionally with the given code. */
export function isToolRuntimeError(error: unknown, code?: ToolRuntimeErrorCode): error is ToolRuntimeError {
  return error instanceof ToolRuntimeError && (code === undefined || error.code === code);
}

/** A readable message from anything thrown. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}
