import { ToolRuntimeError } from '../../../../src/index.js';

/** One hunk of an update: where it goes (anchors, end of file) and its lines. */
export interface PatchHunk {
  /** The texts of its `@@ text` lines, outermost first (empty `@@` lines leave none). */
  anchors: string[];
  /** Context and removed lines, in order: what the file must hold. */
  oldLines: string[];
  /** Context and added lines, in order: what it will hold. */
  newLines: string[];
  /** For each of `newLines`, the index in `oldLines` of the same context line (undefined for an added line). */
  contextOf: (number | undefined)[];
  /** Its `+` and `-` lines. */
  added: number;
  removed: number;
  /** `*** End of File` closed it: it must match at the file's end. */
  endOfFile: boolean;
  /** Line of the patch where it starts (1-based), for messages. */
  patchLine: number;
}

/** One file operation of a patch. */
export type PatchOperation =
  | { kind: 'add'; path: string; lines: string[] }
  | { kind: 'delete'; path: string }
  | { kind: 'update'; path: string; moveTo?: string; hunks: PatchHunk[] };

const BEGIN = '*** Begin Patch';
const END = '*** End Patch';
const ADD = '*** Add File:';
const DELETE = '*** Delete File:';
const UPDATE = '*** Update File:';
const MOVE = '*** Move to:';
const END_OF_FILE = '*** End of File';

const invalid = (message: string) => new ToolRuntimeError('invalid_arguments', `apply_patch: ${message}`);
const quoteLine = (line: string) => JSON.stringify(line.length > 80 ? `${line.slice(0, 80)}…` : line);

/** A line that starts a file operation or ends the patch (markers may carry stray spaces, as models write them). */
const isHeader = (line: string) => {
  const trimmed = line.trim();
  return trimmed === END || trimmed.startsWith(ADD) || trimmed.startsWith(DELETE) || trimmed.startsWith(UPDATE);
};

/** The index of the next header at or after `from` (or `endAt`). */
function sectionEnd(lines: string[], from: number, endAt: number): number {
  let index = from;
  while (index < endAt && !isHeader(lines[index]!)) index++;
  return index;
}

/** `end` less the blank lines just before it: spacing between sections, not content. */
function bodyEnd(lines: string[], from: number, end: number): number {
  let index = end;
  while (index > from && lines[index - 1]!.trim() === '') index--;
  return index;
}

/** Drops a wrapper models sometimes put around the envelope: a heredoc (`<<'EOF'` … `EOF`) or a code fence. */
function unwrap(lines: string[]): string[] {
  const first = lines[0]?.trim() ?? '';
  const last = lines[lines.length - 1]?.trim() ?? '';
  if (/^(apply_patch\s+)?<<\s*['"]?(\w+)['"]?$/.test(first)) {
    const tag = /(\w+)['"]?$/.exec(first)![1];
    if (last === tag) return lines.slice(1, -1);
  }
  if (first.startsWith('```') && last === '```') return lines.slice(1, -1);
  return lines;
}

function pathOf(line: string, marker: string, lineNumber: number): string {
  const value = line.trim().slice(marker.length).trim();
  if (value === '') throw invalid(`line ${lineNumber}: ${marker} needs a path relative to the workspace`);
  return value;
}

/**
 * Parses a patch in the V4A format (the `apply_patch` envelope OpenAI's coding models write):
 * `*** Begin Patch`, then any number of `*** Add File: P` (every line `+`), `*** Delete File: P`
 * (no body) and `*** Update File: P` (optionally `*** Move to: Q`, then hunks), then `*** End Patch`.
 * A hunk starts with `@@` or `@@ anchor text` (several stacked `@@` lines narrow down where it goes;
 * the first hunk may leave it out) and holds context lines (` `), removed lines (`-`) and added lines
 * (`+`); an empty line is an empty context line; `*** End of File` ends a hunk that must match at the
 * file's end. Leniencies, as models need them: CRLF line ends, markers padded with spaces, a heredoc
 * or code-fence wrapper, an Add File body's blank line without its `+`.
 *
 * @throws ToolRuntimeError `invalid_arguments` naming the line of the patch and what was expected.
 */
export function parsePatch(text: string): PatchOperation[] {
  const lines = unwrap(text.replace(/\r\n?/g, '\n').trim().split('\n'));
  if (lines[0]?.trim() !== BEGIN) throw invalid(`the patch must start with "${BEGIN}" (its first line is ${quoteLine(lines[0] ?? '')})`);
  const endAt = lines.findIndex((line, index) => index > 0 && line.trim() === END);
  if (endAt === -1) throw invalid(`the patch must end with "${END}" on a line of its own`);
  if (lines.slice(endAt + 1).some((line) => line.trim() !== '')) throw invalid(`line ${endAt + 2}: text after "${END}"; send one patch per call`);
  const operations: PatchOperation[] = [];
  let index = 1;
  while (index < endAt) {
    const line = lines[index]!;
    const trimmed = line.trim();
    const lineNumber = index + 1;
    if (trimmed === '') {
      index++;
    } else if (trimmed.startsWith(ADD)) {
      const path = pathOf(line, ADD, lineNumber);
      const next = sectionEnd(lines, index + 1, endAt);
      const body: string[] = [];
      for (let at = index + 1; at < bodyEnd(lines, index + 1, next); at++) {
        const bodyLine = lines[at]!;
        if (bodyLine.startsWith('+')) body.push(bodyLine.slice(1));
        else if (bodyLine.trim() === '') body.push('');
        else throw invalid(`line ${at + 1}: every line of "${ADD} ${path}" starts with "+" (the new file's lines); got ${quoteLine(bodyLine)}`);
      }
      index = next;
      operations.push({ kind: 'add', path, lines: body });
    } else if (trimmed.startsWith(DELETE)) {
      operations.push({ kind: 'delete', path: pathOf(line, DELETE, lineNumber) });
      index++;
      while (index < endAt && lines[index]!.trim() === '') index++;
      if (index < endAt && !isHeader(lines[index]!)) throw invalid(`line ${index + 1}: "${DELETE}" takes no body; got ${quoteLine(lines[index]!)}`);
    } else if (trimmed.startsWith(UPDATE)) {
      const path = pathOf(line, UPDATE, lineNumber);
      index++;
      let moveTo: string | undefined;
      if (index < endAt && lines[index]!.trim().startsWith(MOVE)) {
        moveTo = pathOf(lines[index]!, MOVE, index + 1);
        index++;
      }
      const parsed = parseHunks(lines, index, endAt, path);
      index = parsed.next;
      if (parsed.hunks.length === 0 && moveTo === undefined) throw invalid(`line ${lineNumber}: "${UPDATE} ${path}" has no hunk; add "@@" and the lines to change, or use "${DELETE}"`);
      operations.push({ kind: 'update', path, moveTo, hunks: parsed.hunks });
    } else {
      throw invalid(`line ${lineNumber}: ${quoteLine(line)} is not a file operation; expected "${ADD} path", "${UPDATE} path" or "${DELETE} path"`);
    }
  }
  if (operations.length === 0) throw invalid('the patch holds no file operation; nothing was changed');
  return operations;
}

/** Parses the hunks of one Update File section, from `start` to the next header. */
function parseHunks(lines: string[], start: number, endAt: number, path: string): { hunks: PatchHunk[]; next: number } {
  const hunks: PatchHunk[] = [];
  let current: PatchHunk | undefined;
  const next = sectionEnd(lines, start, endAt);
  const stop = bodyEnd(lines, start, next);
  let index = start;
  const open = (patchLine: number): PatchHunk => {
    const hunk: PatchHunk = { anchors: [], oldLines: [], newLines: [], contextOf: [], added: 0, removed: 0, endOfFile: false, patchLine };
    hunks.push(hunk);
    return hunk;
  };
  const hasBody = (hunk: PatchHunk) => hunk.oldLines.length > 0 || hunk.newLines.length > 0;
  for (; index < stop; index++) {
    const line = lines[index]!;
    const trimmed = line.trim();
    if (line.startsWith('@@')) {
      // Consecutive @@ lines stack up as anchors of one hunk.
      if (!current || hasBody(current) || current.endOfFile) current = open(index + 1);
      const anchor = trimmed.slice(2).trim();
      if (anchor !== '') current.anchors.push(anchor);
      continue;
    }
    if (trimmed === END_OF_FILE) {
      if (!current || !hasBody(current)) throw invalid(`line ${index + 1}: "${END_OF_FILE}" closes a hunk, but this hunk of ${path} has no lines`);
      current.endOfFile = true;
      continue;
    }
    if (current?.endOfFile) current = undefined;
    // Spacing between the header and the first hunk.
    if (line === '' && hunks.length === 0) continue;
    const marker = line[0];
    if (marker !== ' ' && marker !== '-' && marker !== '+' && line !== '') {
      throw invalid(
        `line ${index + 1}: ${quoteLine(line)} in the update of ${path}: every hunk line starts with " " (context), "-" (removed) or "+" (added), and a new hunk starts with "@@"`,
      );
    }
    current ??= open(index + 1);
    const body = line.slice(1);
    if (marker === '-') current.removed++;
    if (marker === '+') current.added++;
    const isContext = marker === ' ' || line === '';
    if (marker === '-' || isContext) current.oldLines.push(body);
    if (marker === '+' || isContext) {
      current.newLines.push(body);
      current.contextOf.push(isContext ? current.oldLines.length - 1 : undefined);
    }
  }
  for (const hunk of hunks) {
    if (!hasBody(hunk)) throw invalid(`line ${hunk.patchLine}: a hunk of ${path} has no lines; give the context, "-" and "+" lines after "@@"`);
  }
  return { hunks, next };
}
