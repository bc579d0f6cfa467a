import { truncateMiddle } from '../../src/text/truncate-middle.js';
import type { AgentToolResult, ContentPart } from '../../src/tool/tool-result.js';
import type { CallErrorCode, CallResult } from './turn-event.js';

/** The longest error message a result carries (it appears twice: in `error` and in `content`). */
export const MAX_ERROR_MESSAGE_CHARS = 8_000;

/**
 * An error result: the code and message, and the same message as a text part so a client can
 * forward `content` as the call's output in every case. A message over `MAX_ERROR_MESSAGE_CHARS`
 * keeps its head and tail.
 */
export function errorResult(options: {
  code: CallErrorCode;
  message: string;
  label?: string;
  repairs?: string[];
  durationMs?: number;
}): CallResult {
  // A tool's error text can be anything it threw: keep head and tail, never megabytes twice over.
  const message = truncateMiddle(options.message, MAX_ERROR_MESSAGE_CHARS).text;
  return {
    content: [{ type: 'text', text: `Error (${options.code}): ${message}` }],
    detailsJson: '',
    completedLabel: options.label ?? '',
    terminateTurn: false,
    error: { code: options.code, message },
    repairs: options.repairs ?? [],
    durationMs: options.durationMs ?? 0,
  };
}

/**
 * The result of a tool that returned: text parts cut head and tail at `maxTextChars` (saying how
 * much was cut), details as JSON text (safe against cycles and BigInt).
 */
export function successResult(options: {
  result: AgentToolResult;
  completedLabel: string;
  maxTextChars: number;
  repairs: string[];
  durationMs: number;
}): CallResult {
  const { result } = options;
  const content: ContentPart[] = Array.isArray(result.content) ? limitParts(result.content, options.maxTextChars) : [];
  return {
    content,
    detailsJson: result.details === undefined ? '' : safeJsonStringify(result.details),
    completedLabel: options.completedLabel,
    terminateTurn: result.terminate === true,
    repairs: options.repairs,
    durationMs: options.durationMs,
  };
}

/** The parts with long texts cut; the same array when none is (the usual case), never the tool's array changed. */
function limitParts(parts: ContentPart[], maxChars: number): ContentPart[] {
  let limited: ContentPart[] | undefined;
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index]!;
    const kept = limitPart(part, maxChars);
    if (kept !== part && limited === undefined) limited = parts.slice(0, index);
    limited?.push(kept);
  }
  return limited ?? parts;
}

function limitPart(part: ContentPart, maxChars: number): ContentPart {
  if (part.type !== 'text' || part.text.length <= maxChars) return part;
  return { type: 'text', text: truncateMiddle(part.text, maxChars).text };
}

/**
 * JSON.stringify that never throws: BigInt becomes a string, a repeated (cyclic) object becomes
 * "[Circular]", and anything else unserialisable becomes its String().
 */
export function safeJsonStringify(value: unknown): string {
  try {
    return JSON.stringify(value, bigintReplacer) ?? '';
  } catch {
    const seen = new WeakSet<object>();
    try {
      return (
        JSON.stringify(value, (_key, inner: unknown) => {
          if (typeof inner === 'bigint') return inner.toString();
          if (typeof inner === 'object' && inner !== null) {
            if (seen.has(inner)) return '[Circular]';
            seen.add(inner);
          }
          return inner;
        }) ?? ''
      );
    } catch (error) {
      return JSON.stringify({ unserialisable: String(error) });
    }
  }
}

function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

/** The model-facing message of a refused call: what, why, and not to retry blindly. */
export function deniedMessage(toolName: string, label: string, reason: string): string {
  const what = label && label !== toolName ? `${toolName} (${label})` : toolName;
  const given = reason.trim();
  // A reason is the operator's free text: end it as a sentence, or it runs into "Do not retry".
  const sentence = /[.!?…]["'”’)\]]*$/.test(given) ? given : `${given}.`;
  const why = given ? ` The reason given: ${sentence}` : ' No reason was given.';
  return `This call of ${what} was not approved, so it did not run and nothing was changed.${why} Do not retry the same call unchanged; change the approach, or ask the user what they want instead.`;
}
