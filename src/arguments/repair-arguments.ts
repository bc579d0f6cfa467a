import { jsonrepair } from 'jsonrepair';
import { isJSONObject, type JSONObject } from '../json.js';

/** One step the repair ladder (or validation) took, in the order taken. */
export type RepairStep =
  /** Empty or whitespace-only arguments read as `{}`. */
  | 'empty_to_object'
  /** A JSON string holding the object was unwrapped (once). */
  | 'unwrap_double_encoded'
  /** The block of a markdown code fence was taken. */
  | 'extract_code_fence'
  /** The first balanced `{...}` in surrounding prose was taken. */
  | 'extract_balanced_object'
  /** Prose before an unfinished object was dropped (the object starts at the first `{`). */
  | 'strip_leading_prose'
  /** `jsonrepair` fixed the text (truncation, quotes, commas, comments, Python/JS literals...). */
  | 'jsonrepair'
  /** `null` for optional fields of a strict tool was turned into absent. */
  | 'null_to_absent';

/** What `repairArguments` returns. */
export type RepairResult =
  | { ok: true; value: JSONObject; repairs: RepairStep[] }
  | { ok: false; message: string; repairs: RepairStep[] };

/** Nesting deeper than this is refused before `jsonrepair` (a recursive parser) sees it. */
export const MAX_REPAIR_DEPTH = 256;

/**
 * Parses the model's arguments string into a JSON object with a bounded repair ladder:
 * 1. strict `JSON.parse`; 2. empty or whitespace-only means `{}`; 3. a JSON string holding an
 * object is unwrapped once; 4. a code fence yields its block, failing that the first balanced
 * `{...}` in the text (or the text from the first `{` when the object is unfinished);
 * 5. `jsonrepair`. The result must be a plain object.
 *
 * Clean input costs one `JSON.parse`. Never throws: a failure is `{ ok: false, message }` with a
 * message written for the model.
 */
export function repairArguments(text: string): RepairResult {
  const repairs: RepairStep[] = [];
  try {
    return ladder(text, repairs, true);
  } catch (error) {
    // RangeError from pathological nesting, or anything a dependency throws: never escape.
    const message = error instanceof RangeError ? 'the arguments are nested too deeply' : `the arguments are not valid JSON (${(error as Error).message})`;
    return { ok: false, message, repairs };
  }
}

function ladder(text: string, repairs: RepairStep[], mayUnwrap: boolean): RepairResult {
  const parsed = tryParse(text);
  if (parsed.ok) return finish(parsed.value, repairs, mayUnwrap);

  if (text.trim() === '') {
    repairs.push('empty_to_object');
    return { ok: true, value: {}, repairs };
  }

  let candidate = text;
  const fenced = extractCodeFence(text);
  if (fenced !== undefined) {
    repairs.push('extract_code_fence');
    candidate = fenced;
  } else {
    const start = text.indexOf('{');
    if (start >= 0) {
      const end = findBalancedEnd(text, start);
      if (end >= 0) {
        const object = text.slice(start, end + 1);
        if (object !== text.trim()) {
          repairs.push('extract_balanced_object');
          candidate = object;
        }
      } else if (text.slice(0, start).trim() !== '') {
        repairs.push('strip_leading_prose');
        candidate = text.slice(start);
      }
    }
  }
  if (candidate !== text) {
    const again = tryParse(candidate);
    if (again.ok) return finish(again.value, repairs, mayUnwrap);
    if (candidate.trim() === '') return { ok: false, message: 'the code fence is empty: expected a JSON object', repairs };
  }

  if (nestingDepth(candidate) > MAX_REPAIR_DEPTH) {
    return { ok: false, message: `the arguments are nested deeper than ${MAX_REPAIR_DEPTH} levels`, repairs };
  }
  let repaired: string;
  try {
    repaired = jsonrepair(candidate);
  } catch (error) {
    if (error instanceof RangeError) throw error;
    return { ok: false, message: `the arguments are not valid JSON and could not be repaired: ${(error as Error).message}`, repairs };
  }
  repairs.push('jsonrepair');
  const last = tryParse(repaired);
  if (!last.ok) return { ok: false, message: 'the arguments are not valid JSON and could not be repaired', repairs };
  return finish(last.value, repairs, mayUnwrap);
}

function finish(value: unknown, repairs: RepairStep[], mayUnwrap: boolean): RepairResult {
  if (isJSONObject(value)) return { ok: true, value, repairs };
  if (typeof value === 'string' && mayUnwrap && looksLikeObjectText(value)) {
    repairs.push('unwrap_double_encoded');
    return ladder(value, repairs, false);
  }
  return { ok: false, message: `expected the arguments to be a JSON object, got ${describeKind(value)}`, repairs };
}

/** A double-encoded string is only unwrapped when it holds (the start of) an object. */
function looksLikeObjectText(value: string): boolean {
  const trimmed = value.trimStart();
  return trimmed.startsWith('{') || trimmed.startsWith('```');
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    if (error instanceof RangeError) throw error;
    return { ok: false };
  }
}

/**
 * The block of the first markdown code fence, with or without a language, with or without prose
 * around it; an unclosed fence (truncated output) runs to the end of the text.
 */
export function extractCodeFence(text: string): string | undefined {
  const open = text.indexOf('```');
  if (open < 0) return undefined;
  let start = open + 3;
  while (start < text.length && text[start] === '`') start++;
  const newline = text.indexOf('\n', start);
  // A language tag is a word on the fence line; `{` right after the fence is content, not a tag.
  const firstLine = newline < 0 ? text.slice(start) : text.slice(start, newline);
  if (/^[\w+.-]*\s*$/.test(firstLine)) start = newline < 0 ? text.length : newline + 1;
  const close = text.indexOf('```', start);
  return (close < 0 ? text.slice(start) : text.slice(start, close)).trim();
}

/**
 * The index of the `}` that closes the `{` at `start`, skipping over JSON strings (escapes
 * included); -1 when the object never closes.
 */
export function findBalancedEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) {
      inString = true;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      depth++;
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      depth--;
      if (depth === 0) return c === 125 ? i : -1;
      if (depth < 0) return -1;
    }
  }
  return -1;
}

/** The deepest bracket nesting of `text`, outside JSON strings; stops counting past the limit. */
function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;
      else if (c === 34) inString = false;
    } else if (c === 34) {
      inString = true;
    } else if (c === 123 || c === 91) {
      if (++depth > max && (max = depth) > MAX_REPAIR_DEPTH) return max;
    } else if (c === 125 || c === 93) {
      depth--;
    }
  }
  return max;
}

function describeKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `a string (${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)})`;
  return `a ${typeof value}`;
}
