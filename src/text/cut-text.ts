/**
 * Cuts that never split a character. Strings are UTF-16: a character outside the Basic
 * Multilingual Plane (an emoji) is two code units, and a cut between them leaves a lone surrogate,
 * which encodes to U+FFFD or fails a strict UTF-8 encoder. Every cut of text bound for the model or
 * a client goes through these (HeadTailBuffer, truncateMiddle, streamed output, progress messages).
 */

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** The first `maxChars` code units of `text` at most, one fewer when the last would be half a pair. */
export function headOf(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let end = Math.max(0, Math.floor(maxChars));
  if (end > 0 && isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
  return text.slice(0, end);
}

/** The last `maxChars` code units of `text` at most, one fewer when the first would be half a pair. */
export function tailOf(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let start = text.length - Math.max(0, Math.floor(maxChars));
  if (start < text.length && isLowSurrogate(text.charCodeAt(start))) start += 1;
  return text.slice(start);
}
