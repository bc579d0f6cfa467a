import { headOf, tailOf } from './cut-text.js';

/** What `truncateMiddle` kept. */
export interface TruncatedText {
  text: string;
  /** How many characters were cut from the middle (0 when the text fit). */
  cutChars: number;
}

/**
 * Keeps the head and the tail of a text that is longer than `maxChars` and says in the middle how
 * much was cut, so the model sees both how output began and how it ended. The marker counts toward
 * the limit, so the result never exceeds `maxChars` (for `maxChars` of at least 64).
 */
export function truncateMiddle(text: string, maxChars: number): TruncatedText {
  if (text.length <= maxChars) return { text, cutChars: 0 };
  const budget = Math.max(0, maxChars - 64);
  const headChars = Math.ceil(budget / 2);
  const tailChars = budget - headChars;
  // Whole characters only: a pair at either cut is dropped whole, and counted as cut.
  const head = headOf(text, headChars);
  const tail = tailChars > 0 ? tailOf(text, tailChars) : '';
  const cutChars = text.length - head.length - tail.length;
  const marker = `\n[… ${cutChars} characters cut …]\n`;
  return { text: head + marker + tail, cutChars };
}
