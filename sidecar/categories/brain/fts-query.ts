import { ToolRuntimeError } from '../../../src/index.js';

/**
 * Turns free text from the model into a safe FTS5 MATCH expression: every word (letters and digits)
 * becomes a quoted string, joined with OR so that bm25 ranks pages by how many words they hold.
 * FTS5 operators and punctuation in the query (`AND`, `NEAR`, `*`, `"`, `:`, `-`) lose their
 * meaning, so no query text can make MATCH fail or read another column.
 *
 * @throws ToolRuntimeError `invalid_arguments` when the query holds no word at all.
 */
export function toFtsQuery(query: string, maxTerms = 32): string {
  const words = query.match(/[\p{L}\p{N}_]+/gu) ?? [];
  const unique = [...new Set(words.map((word) => word.toLowerCase()))].slice(0, maxTerms);
  if (unique.length === 0) throw new ToolRuntimeError('invalid_arguments', `the query ${JSON.stringify(query)} has no word to search for`);
  return unique.map((word) => `"${word}"`).join(' OR ');
}
