import { truncateMiddle } from '../../src/text/truncate-middle.js';
import type { ContentPart, ToolResult, TurnResponse } from '../../src/gen/toolruntime/v1/sidecar.js';

/** Room kept for tags, lengths, flags and the duration of a message. */
const OVERHEAD_BYTES = 1_024;
/** Room kept per content part for its tags and lengths. */
const PART_OVERHEAD_BYTES = 16;
const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

/** A text cut to at most `maxBytes` of UTF-8 (a UTF-16 unit is at most 3 bytes), head and tail kept. */
function cutToBytes(text: string, maxBytes: number): string {
  if (utf8(text) <= maxBytes) return text;
  return truncateMiddle(text, Math.max(64, Math.floor(maxBytes / 3))).text;
}

function partBytes(part: ContentPart): number {
  switch (part.part?.$case) {
    case 'text':
    case 'json':
      return utf8(part.part.value) + PART_OVERHEAD_BYTES;
    case 'image':
      return part.part.value.data.length + utf8(part.part.value.mimeType) + PART_OVERHEAD_BYTES;
    default:
      return PART_OVERHEAD_BYTES;
  }
}

const textPart = (text: string): ContentPart => ({ part: { $case: 'text', value: text } });

/** Keeps content parts in order while they fit `budget`; the first that does not is cut, the rest said. */
function capContent(content: ContentPart[], budget: number, maxBytes: number): ContentPart[] {
  const kept: ContentPart[] = [];
  let left = budget - 512; // room for the closing note
  for (let index = 0; index < content.length; index++) {
    const part = content[index]!;
    const size = partBytes(part);
    if (size <= left) {
      kept.push(part);
      left -= size;
      continue;
    }
    if (part.part?.$case === 'text' && left > 1_024) {
      kept.push(textPart(cutToBytes(part.part.value, left - PART_OVERHEAD_BYTES)));
      index++;
    }
    const dropped = content.length - index;
    if (dropped > 0) {
      kept.push(textPart(`\n[… ${dropped} more content part${dropped === 1 ? '' : 's'} (${content.slice(index).reduce((sum, rest) => sum + partBytes(rest), 0)} bytes) cut: the result was over the ${maxBytes}-byte message limit …]`));
    }
    return kept;
  }
  return kept;
}

function capResult(result: ToolResult, budget: number, maxBytes: number): ToolResult {
  const error = result.error ? { code: cutToBytes(result.error.code, 256), message: cutToBytes(result.error.message, 32_000) } : undefined;
  const completedLabel = cutToBytes(result.completedLabel, 4_000);
  const repairs = result.repairs.slice(0, 64).map((repair) => cutToBytes(repair, 256));
  let left = budget - utf8(completedLabel) - (error ? utf8(error.code) + utf8(error.message) : 0) - repairs.reduce((sum, repair) => sum + utf8(repair) + 8, 0);
  const contentBytes = result.content.reduce((sum, part) => sum + partBytes(part), 0);
  const detailsBytes = utf8(result.detailsJson);
  let detailsJson = result.detailsJson;
  let content = result.content;
  // The model's content comes first; the details (for logs) give way.
  if (contentBytes + detailsBytes > left && detailsBytes > 0) {
    detailsJson = JSON.stringify({ cut: `the details were ${detailsBytes} bytes; with the content (${contentBytes} bytes) the result was over the ${maxBytes}-byte message limit` });
  }
  left -= utf8(detailsJson);
  if (contentBytes > left) content = capContent(result.content, left, maxBytes);
  return { ...result, content, detailsJson, completedLabel, error, repairs };
}

/**
 * A TurnResponse cut to fit `maxBytes` once encoded: a result keeps its content first (text cut
 * head and tail, later parts dropped with a note) and its details give way to a JSON note; a
 * presentation event's payload becomes a JSON note saying how large it was; a label is cut.
 * Each note says what was cut and why. Pure; the caller encodes it and checks the size again.
 */
export function capTurnResponse(message: TurnResponse, maxBytes: number): TurnResponse {
  // A call id is bounded on receipt; one that still fills half the message cannot be echoed.
  const callId = utf8(message.callId) > maxBytes / 2 ? message.callId.slice(0, 256) : message.callId;
  const budget = maxBytes - OVERHEAD_BYTES - utf8(callId);
  const event = message.event;
  switch (event?.$case) {
    case 'activityStarted':
      return { callId, event: { $case: 'activityStarted', value: { label: cutToBytes(event.value.label, Math.min(budget, 4_000)) } } };
    case 'presentation': {
      const bytes = utf8(event.value.payloadJson);
      const kind = cutToBytes(event.value.kind, 256);
      const payloadJson = bytes + utf8(kind) <= budget ? event.value.payloadJson : JSON.stringify({ cut: `the event's payload was ${bytes} bytes, over the ${maxBytes}-byte message limit` });
      return { callId, event: { $case: 'presentation', value: { kind, payloadJson } } };
    }
    case 'result':
      return { callId, event: { $case: 'result', value: capResult(event.value, budget, maxBytes) } };
    default:
      return { ...message, callId };
  }
}

/**
 * The smallest honest answer when even a capped response does not fit: for a result, an
 * `internal` error saying so; for anything else, the event without its payload.
 */
export function minimalTurnResponse(message: TurnResponse, maxBytes: number): TurnResponse {
  const callId = message.callId.slice(0, 256);
  if (message.event?.$case !== 'result') return { callId, event: undefined };
  const text = `the call's result could not be cut to fit the ${maxBytes}-byte message limit and was dropped`;
  return {
    callId,
    event: {
      $case: 'result',
      value: { content: [textPart(`Error (internal): ${text}`)], detailsJson: '', completedLabel: '', terminateTurn: message.event.value.terminateTurn, error: { code: 'internal', message: text }, repairs: [], durationMs: message.event.value.durationMs },
    },
  };
}
