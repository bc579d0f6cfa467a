/** One part of what the model sees from a tool call. */
export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image'; data: Uint8Array; mimeType: string }
  | { type: 'json'; value: unknown };

/** Something a tool shows while or after it runs (command output, a todo list update). */
export interface PresentationEvent {
  /** What kind of event, for example `command.output` or `todo.updated`. */
  kind: string;
  /** Any JSON-serialisable payload. */
  payload: unknown;
}

/** What a tool's `execute` returns. */
export interface AgentToolResult<TDetails = unknown> {
  /** What the model sees. */
  content: ContentPart[];
  /** Structured data for logs only; the model never sees it. */
  details?: TDetails;
  /** Presentation events to emit after the ones sent during the run. */
  presentation?: PresentationEvent[];
  /** End the turn once this result is recorded (an accepted submit_result, for instance). */
  terminate?: boolean;
}

/** A text part. */
export function textContent(text: string): ContentPart {
  return { type: 'text', text };
}

/** A result that holds one text part. */
export function textResult<TDetails = unknown>(
  text: string,
  extra: Omit<AgentToolResult<TDetails>, 'content'> = {},
): AgentToolResult<TDetails> {
  return { content: [textContent(text)], ...extra };
}
