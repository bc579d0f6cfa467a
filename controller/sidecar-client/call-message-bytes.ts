import type { CallRequest } from './sidecar-types.js';

/** The fixed part of a TurnRequest carrying a CallTool at most: envelope tags and lengths, the deadline. */
const CALL_ENVELOPE_BYTES = 64;

/** An upper bound of a CallTool message's encoded size: exact UTF-8 lengths only when a cheap bound is over `limit`. */
export function callMessageBytes(request: CallRequest, limit: number): number {
  const fields = [request.callId, request.name, request.namespace ?? '', request.argumentsJson];
  // A UTF-16 unit is at most 3 UTF-8 bytes; each string field adds a tag and a length of at most 6 bytes.
  const bound = fields.reduce((sum, text) => sum + 6 + text.length * 3, CALL_ENVELOPE_BYTES);
  if (bound <= limit) return bound;
  return fields.reduce((sum, text) => sum + 6 + Buffer.byteLength(text, 'utf8'), CALL_ENVELOPE_BYTES);
}
