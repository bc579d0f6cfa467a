import { ToolRuntimeError } from '../../../../src/index.js';

/** The longest `until` a call may give. */
export const MAX_UNTIL_CHARS = 200;
/**
 * Characters of earlier output kept in front of each new piece when matching, so a prompt split
 * across two reads of the PTY still matches. A prompt or marker is short; a match longer than this
 * is not looked for.
 */
const CARRY_CHARS = 1_024;

/** Watches output for the text or pattern a call named as its `until`. */
export interface UntilMatcher {
  /** Feeds the next piece of output; true once the pattern has been seen. */
  feed(text: string): boolean;
  /** What the model asked for, for the result's status line. */
  readonly description: string;
}

/**
 * Parses `until`: `/pattern/flags` is a regular expression (flags among `imsu`), anything else a
 * literal (`">>> "`, `"$ "`, `"Password:"`). Matching runs on each new piece of output with the
 * last 1,024 characters before it, so it costs a pass over the output, not a pass over everything
 * since the write per piece.
 *
 * The sidecar's event loop runs the regular expression, and the model writes it: a pattern with a
 * quantified group that itself holds a quantifier (`(a+)+`, `(x*y?)*`) or a back-reference can take
 * exponential time on a crafted output, so those are refused (JavaScript has no linear-time engine
 * built in).
 *
 * @throws ToolRuntimeError `invalid_arguments` for an empty or too long `until`, a regular
 *   expression that does not compile, or one refused as above; the message says how to fix it.
 */
export function parseUntil(until: string): UntilMatcher {
  if (until === '') throw new ToolRuntimeError('invalid_arguments', 'until is empty: give the text to wait for (such as ">>> "), or leave until out');
  if (until.length > MAX_UNTIL_CHARS) throw new ToolRuntimeError('invalid_arguments', `until is ${until.length} characters; at most ${MAX_UNTIL_CHARS}: wait for a short prompt or marker`);
  const regex = /^\/(.+)\/([imsu]*)$/s.exec(until);
  if (!regex) return literalMatcher(until);
  const [, source, flags] = regex as unknown as [string, string, string];
  refuseSlowPattern(source);
  let compiled: RegExp;
  try {
    compiled = new RegExp(source, flags);
  } catch (error) {
    throw new ToolRuntimeError('invalid_arguments', `until ${JSON.stringify(until)} is not a valid regular expression (${(error as Error).message}); a literal text is matched as it is when it is not written /like this/`);
  }
  let carry = '';
  return {
    description: `/${source}/${flags}`,
    feed(text) {
      const window = carry + text;
      carry = window.slice(-CARRY_CHARS);
      return compiled.test(window);
    },
  };
}

function literalMatcher(literal: string): UntilMatcher {
  let carry = '';
  return {
    description: JSON.stringify(literal),
    feed(text) {
      const window = carry + text;
      // Enough to finish a match that started in this piece and ends in the next.
      carry = literal.length > 1 ? window.slice(-(literal.length - 1)) : '';
      return window.includes(literal);
    },
  };
}

/** Refuses back-references and nested quantifiers (see parseUntil). */
function refuseSlowPattern(source: string): void {
  const fix = 'Fix: wait for a literal text instead (until without slashes), or a pattern without a repeated group that repeats inside';
  if (/\\[1-9]|\\k</.test(source)) throw new ToolRuntimeError('invalid_arguments', `until /${source}/ uses a back-reference, which can take exponential time on the sidecar. ${fix}.`);
  // Walk the groups: a group whose content has a quantifier, itself followed by a quantifier.
  const stack: boolean[] = [];
  for (let index = 0; index < source.length; index++) {
    const char = source[index]!;
    if (char === '\\') {
      index++;
      continue;
    }
    if (char === '[') {
      // A class: skip to its end (escapes inside included).
      for (index++; index < source.length && source[index] !== ']'; index++) if (source[index] === '\\') index++;
      continue;
    }
    if (char === '(') stack.push(false);
    else if (char === ')') {
      const quantifiedInside = stack.pop() ?? false;
      const next = source[index + 1];
      const quantified = next === '*' || next === '+' || next === '?' || next === '{';
      if (quantifiedInside && quantified && next !== '?') throw new ToolRuntimeError('invalid_arguments', `until /${source}/ repeats a group that repeats inside, which can take exponential time on the sidecar. ${fix}.`);
      if (stack.length > 0 && (quantifiedInside || quantified)) stack[stack.length - 1] = true;
    } else if ((char === '*' || char === '+' || char === '{') && stack.length > 0) stack[stack.length - 1] = true;
    else if (char === '?' && stack.length > 0 && source[index - 1] !== '(') stack[stack.length - 1] = true;
  }
}
