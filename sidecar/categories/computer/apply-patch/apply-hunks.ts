import { ToolRuntimeError } from '../../../../src/index.js';
import type { PatchHunk } from './parse-patch.js';

/** How loosely a hunk's lines matched the file, the strictest that worked. */
export type MatchLevel = 'exact' | 'trailing-whitespace' | 'whitespace' | 'punctuation';

/** The typographic characters models write for ASCII ones (and the reverse), read as the ASCII ones. */
const PUNCTUATION: [RegExp, string][] = [
  [/[\u2010-\u2015\u2212]/g, '-'],
  [/[\u2018\u2019\u201A\u201B]/g, "'"],
  [/[\u201C\u201D\u201E\u201F]/g, '"'],
  [/[\u00A0\u2002-\u200A\u202F\u205F\u3000]/g, ' '],
];
const normalise = (line: string) => PUNCTUATION.reduce((text, [pattern, ascii]) => text.replace(pattern, ascii), line.trim());

/** The comparisons tried in order, from exact to the loosest (the same ladder Codex's applier climbs). */
const LEVELS: [MatchLevel, (line: string) => string][] = [
  ['exact', (line) => line],
  ['trailing-whitespace', (line) => line.trimEnd()],
  ['whitespace', (line) => line.trim()],
  ['punctuation', normalise],
];

/**
 * Finds `pattern` in `lines` at or after `from`: the first place where every line matches exactly;
 * failing that, ignoring trailing whitespace; then surrounding whitespace; then typographic
 * punctuation. With `atEnd` only the file's last lines are tried.
 */
export function seekLines(lines: string[], pattern: string[], from: number, atEnd: boolean): { index: number; level: MatchLevel } | undefined {
  if (pattern.length > lines.length) return undefined;
  const first = atEnd ? lines.length - pattern.length : from;
  const last = lines.length - pattern.length;
  if (first < from) return undefined;
  for (const [level, key] of LEVELS) {
    const wanted = pattern.map(key);
    for (let index = first; index <= last; index++) {
      let k = 0;
      while (k < wanted.length && key(lines[index + k]!) === wanted[k]) k++;
      if (k === wanted.length) return { index, level };
    }
  }
  return undefined;
}

/** The first line at or after `from` that starts with `anchor` (both trimmed): `@@ function main()` finds `function main() {`. */
function seekPrefix(lines: string[], anchor: string, from: number): { index: number } | undefined {
  const wanted = anchor.trim();
  for (let index = from; index < lines.length; index++) if (lines[index]!.trim().startsWith(wanted)) return { index };
  return undefined;
}

/** The result of applying one file's hunks. */
export interface AppliedHunks {
  text: string;
  added: number;
  removed: number;
  /** Things the model should know: an anchor not found, a hunk placed by a loose match. */
  notes: string[];
}

/** Where the file is closest to what a hunk expected: the start with the most matching lines (ignoring whitespace). */
function closest(lines: string[], pattern: string[], near: number): { index: number; score: number } | undefined {
  const wanted = pattern.map((line) => line.trim());
  let best: { index: number; score: number } | undefined;
  for (let index = 0; index < lines.length; index++) {
    let score = 0;
    for (let k = 0; k < wanted.length && index + k < lines.length; k++) if (lines[index + k]!.trim() === wanted[k] && wanted[k] !== '') score++;
    if (score > 0 && (!best || score > best.score || (score === best.score && Math.abs(index - near) < Math.abs(best.index - near)))) best = { index, score };
  }
  return best;
}

const show = (lines: string[]) => lines.map((line) => `    ${line}`).join('\n');

function mismatch(path: string, hunkNumber: number, hunk: PatchHunk, lines: string[], cursor: number, where: string): ToolRuntimeError {
  const expected = hunk.oldLines.slice(0, 6);
  const more = hunk.oldLines.length > expected.length ? `\n    [… ${hunk.oldLines.length - expected.length} more lines]` : '';
  const everywhere = seekLines(lines, hunk.oldLines, 0, false);
  let hint: string;
  if (everywhere && everywhere.index < cursor) {
    hint = `These lines are at line ${everywhere.index + 1}, before ${where}: hunks of one file must come in the file's order.`;
  } else {
    const near = closest(lines, hunk.oldLines, cursor);
    hint = near
      ? `The closest lines in the file are at line ${near.index + 1}:\n${lines
          .slice(near.index, near.index + Math.min(6, hunk.oldLines.length))
          .map((line, k) => `    ${String(near.index + k + 1).padStart(5)}| ${line}`)
          .join('\n')}`
      : 'None of these lines is in the file.';
  }
  return new ToolRuntimeError(
    'tool_failed',
    `apply_patch: hunk ${hunkNumber} of ${path} (patch line ${hunk.patchLine}) does not match the file, so nothing was changed. ` +
      `It expects these lines${hunk.endOfFile ? ' at the end of the file' : ''}, ${where}:\n${show(expected)}${more}\n${hint}\n` +
      'Read the file there and send the patch again with its context and "-" lines exactly as the file has them.',
  );
}

/**
 * Applies the hunks of one Update File to `before`, in memory. Each hunk is looked for after the
 * previous one (its `@@` anchors first narrow the place down, each the first line after the last that
 * is, or starts with, the anchor's text; an anchor that is not found is noted
 * and skipped, the hunk's own lines decide); a hunk with no context and no removed line goes right
 * after its anchor, or at the end of the file. Context lines keep the file's own text (a loose match
 * does not rewrite their whitespace). Line ends are kept: CRLF files stay CRLF, and the
 * file ends with a newline exactly when it did before (an empty file gets one).
 *
 * @throws ToolRuntimeError `tool_failed` naming the file, the hunk, the lines it expected, where, and
 *   the closest lines the file has.
 */
export function applyHunks(path: string, before: string, hunks: PatchHunk[]): AppliedHunks {
  const crlf = before.includes('\r\n') && !/(^|[^\r])\n/.test(before);
  const endsWithNewline = before === '' || before.endsWith('\n');
  const lines = before === '' ? [] : (crlf ? before.replace(/\r\n/g, '\n') : before).split('\n');
  if (endsWithNewline && lines.length > 0) lines.pop();
  const notes: string[] = [];
  const replacements: { at: number; remove: number; insert: string[]; order: number }[] = [];
  let cursor = 0;
  let added = 0;
  let removed = 0;
  hunks.forEach((hunk, position) => {
    const hunkNumber = position + 1;
    let anchored = false;
    let where = cursor === 0 ? 'from the start of the file' : `after line ${cursor}, where hunk ${hunkNumber - 1} ended`;
    for (const anchor of hunk.anchors) {
      const found = seekLines(lines, [anchor], cursor, false) ?? seekPrefix(lines, anchor, cursor);
      if (found) {
        cursor = found.index + 1;
        anchored = true;
        where = `after line ${found.index + 1} (${JSON.stringify(anchor)})`;
      } else {
        notes.push(`${path}: the anchor "@@ ${anchor}" of hunk ${hunkNumber} is not in the file; the hunk was placed by its own lines`);
      }
    }
    let oldLines = hunk.oldLines;
    let newLines = hunk.newLines;
    if (oldLines.length === 0) {
      const at = anchored && !hunk.endOfFile ? cursor : lines.length;
      replacements.push({ at, remove: 0, insert: newLines, order: position });
      added += hunk.added;
      return;
    }
    let found = seekLines(lines, oldLines, cursor, hunk.endOfFile);
    if (!found && oldLines[oldLines.length - 1] === '') {
      // A trailing empty context line stands for the file's final newline, which `lines` leaves out.
      oldLines = oldLines.slice(0, -1);
      if (newLines[newLines.length - 1] === '') newLines = newLines.slice(0, -1);
      found = seekLines(lines, oldLines, cursor, hunk.endOfFile);
    }
    if (!found) throw mismatch(path, hunkNumber, hunk, lines, cursor, where);
    if (found.level !== 'exact') notes.push(`${path}: hunk ${hunkNumber} matched at line ${found.index + 1} only when ${found.level === 'punctuation' ? 'typographic punctuation and whitespace were' : found.level === 'whitespace' ? 'whitespace was' : 'trailing whitespace was'} ignored`);
    // Context lines keep the file's own text (its whitespace), even when they matched loosely.
    const at = found.index;
    const insert = newLines.map((line, k) => {
      const source = hunk.contextOf[k];
      return source !== undefined && source < oldLines.length ? lines[at + source]! : line;
    });
    replacements.push({ at, remove: oldLines.length, insert, order: position });
    cursor = found.index + oldLines.length;
    removed += hunk.removed;
    added += hunk.added;
  });
  replacements.sort((a, b) => a.at - b.at || a.order - b.order);
  const out: string[] = [];
  let index = 0;
  for (const replacement of replacements) {
    out.push(...lines.slice(index, replacement.at), ...replacement.insert);
    index = replacement.at + replacement.remove;
  }
  out.push(...lines.slice(index));
  const eol = crlf ? '\r\n' : '\n';
  const text = out.length === 0 ? '' : out.join(eol) + (endsWithNewline ? eol : '');
  return { text, added, removed, notes };
}
