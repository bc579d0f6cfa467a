import path from 'node:path';
import picomatch from 'picomatch';
import { z } from 'zod';
import { defineWorkerTool, textResult, ToolRuntimeError, truncateMiddle, type WorkerAgentTool } from '../../../src/index.js';
import type { CategoryConfig } from '../category-config.js';
import { listWorkspaceFiles } from './list-workspace-files.js';
import { createWorkspaceFiles, type WorkspaceFiles } from './files/workspace-files.js';
import type { SandboxPolicy } from './sandbox/sandbox-policy.js';
import { smallDiff } from './small-diff.js';

/** The largest file read_file and edit_file open, in bytes. */
export const MAX_TEXT_FILE_BYTES = 5 * 1024 * 1024;
/** Lines read_file returns when no range is given. */
export const DEFAULT_READ_LINES = 2_000;

const fail = (message: string) => new ToolRuntimeError('tool_failed', message);

/**
 * Decodes a file's bytes as UTF-8, refusing binary files. A `cut` read may end inside a character:
 * up to three trailing bytes of an unfinished sequence are dropped.
 *
 * @throws ToolRuntimeError `tool_failed` for a NUL byte in the first 8 KiB or invalid UTF-8.
 */
export function decodeText(bytes: Buffer, shown: string, cut = false): string {
  if (bytes.subarray(0, 8192).includes(0)) throw fail(`${shown} is a binary file (${bytes.length} bytes); the file tools only read text`);
  const decoder = () => new TextDecoder('utf-8', { fatal: true });
  for (let drop = 0; drop <= (cut ? 3 : 0); drop++) {
    try {
      return decoder().decode(bytes.subarray(0, bytes.length - drop));
    } catch {
      // try one byte shorter (only for a cut read)
    }
  }
  throw fail(`${shown} is a binary file (${bytes.length} bytes, not valid UTF-8); the file tools only read text`);
}

const countLines = (text: string) => (text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0));

const readSchema = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root.'),
  start_line: z.number().int().min(1).optional().describe('First line to return (1-based).'),
  end_line: z.number().int().min(1).optional().describe(`Last line to return (default: start_line + ${DEFAULT_READ_LINES - 1}).`),
});
const writeSchema = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root; parent folders are created.'),
  content: z.string().describe('The whole new content of the file.'),
});
const editSchema = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root.'),
  old_string: z.string().min(1).describe('The exact text to replace (must match exactly once unless replace_all).'),
  new_string: z.string().describe('The replacement text.'),
  replace_all: z.boolean().optional().describe('Replace every occurrence instead of exactly one.'),
});
const listSchema = z.object({
  pattern: z.string().min(1).describe('A glob relative to the workspace root, e.g. "src/**/*.ts".'),
});

/**
 * The file tools of the computer category: read_file and list_files (read-only, parallel),
 * write_file and edit_file (destructive, sequential). Every file is opened through `files`
 * (files/workspace-files.ts: a walk from the workspace's descriptor that no symlink swap can lead
 * out, the sandbox's rule checked on what was opened, reads capped, FIFOs and devices refused,
 * writes by temp file and rename) and held to the turn's sandbox `policy` like the commands are;
 * errors are thrown with a message the model can act on.
 */
export function createFileTools(options: { config: CategoryConfig; policy: SandboxPolicy; files?: WorkspaceFiles }): WorkerAgentTool[] {
  const { config, policy } = options;
  const files = options.files ?? createWorkspaceFiles({ workspace: config.workspace, policy });

  const readTool = defineWorkerTool({
    name: 'read_file',
    description: `Read a text file of the workspace, with line numbers. Returns up to ${DEFAULT_READ_LINES} lines from start_line; binary files are refused.`,
    schema: readSchema,
    executionMode: 'parallel',
    isReadOnly: true,
    describeActivity: (params) => `Reading ${params.path}`,
    describeCompletedActivity: (params, result) => {
      const lines = (result.details as { lines?: number } | undefined)?.lines;
      return lines === undefined ? `Read ${params.path}` : `Read ${params.path} (${lines} lines)`;
    },
    async execute(params, context) {
      const target = await files.read(params.path, { access: 'read', maxBytes: MAX_TEXT_FILE_BYTES, signal: context.signal });
      const text = decodeText(target.bytes, target.relative, target.cut);
      if (context.signal.aborted) throw new ToolRuntimeError('aborted', 'read_file was aborted');
      const lines = text.split('\n');
      if (text.endsWith('\n')) lines.pop();
      const start = params.start_line ?? 1;
      const end = Math.min(lines.length, params.end_line ?? start + DEFAULT_READ_LINES - 1);
      if (params.end_line !== undefined && params.end_line < start) throw new ToolRuntimeError('invalid_arguments', `end_line ${params.end_line} is before start_line ${start}`);
      if (lines.length > 0 && start > lines.length) throw new ToolRuntimeError('invalid_arguments', `start_line ${start} is past the end of ${target.relative} (${lines.length} lines)`);
      const width = String(end).length;
      const numbered = lines.slice(start - 1, end).map((line, index) => `${String(start + index).padStart(width)}\t${line}`);
      const shown = truncateMiddle(numbered.join('\n'), config.limits.maxResultTextChars - 200);
      const header = `${target.relative}: lines ${lines.length === 0 ? 0 : start}-${end} of ${lines.length}${end < lines.length ? ` (read on with start_line=${end + 1})` : ''}`;
      const note = target.cut ? `\n[… the file grew past the ${MAX_TEXT_FILE_BYTES}-byte cap while it was read: only its first ${MAX_TEXT_FILE_BYTES} bytes are shown …]` : '';
      return textResult(`${header}\n${shown.text}${note}`, { details: { path: target.relative, lines: lines.length, start, end, cut: target.cut } });
    },
  });

  const writeTool = defineWorkerTool({
    name: 'write_file',
    description: 'Create or overwrite a file of the workspace with the given content; missing parent folders are created.',
    schema: writeSchema,
    executionMode: 'sequential',
    isDestructive: true,
    describeActivity: (params) => `Writing ${params.path}`,
    describeCompletedActivity: (params) => `Wrote ${params.path} (${countLines(params.content)} lines)`,
    async execute(params, context) {
      const [written] = await files.commit([{ path: params.path, content: params.content }], context.signal);
      const bytes = Buffer.byteLength(params.content);
      return textResult(`${written!.action === 'created' ? 'Created' : 'Overwrote'} ${written!.relative}: ${bytes} bytes, ${countLines(params.content)} lines`, {
        details: { path: written!.relative, bytes, created: written!.action === 'created' },
      });
    },
  });

  const editTool = defineWorkerTool({
    name: 'edit_file',
    description:
      'Replace exact text in a workspace file. old_string must match exactly once (include surrounding lines to make it unique) unless replace_all is true. Returns a small diff.',
    schema: editSchema,
    executionMode: 'sequential',
    isDestructive: true,
    describeActivity: (params) => `Editing ${params.path}`,
    describeCompletedActivity: (params, result) => {
      const count = (result.details as { replacements?: number } | undefined)?.replacements;
      return `Edited ${params.path}${count ? ` (${count} replacement${count === 1 ? '' : 's'})` : ''}`;
    },
    async execute(params, context) {
      const target = await files.read(params.path, { access: 'write', maxBytes: MAX_TEXT_FILE_BYTES, signal: context.signal, whole: true });
      const before = decodeText(target.bytes, target.relative);
      if (params.old_string === params.new_string) throw new ToolRuntimeError('invalid_arguments', 'old_string and new_string are the same: nothing to change');
      const parts = before.split(params.old_string);
      const matches = parts.length - 1;
      if (matches === 0) throw fail(`old_string was not found in ${target.relative}; read the file and copy the text exactly, whitespace included`);
      if (matches > 1 && !params.replace_all) {
        throw fail(`old_string matches ${matches} times in ${target.relative}; include more surrounding text to make it unique, or set replace_all`);
      }
      const after = parts.join(params.new_string);
      if (context.signal.aborted) throw new ToolRuntimeError('aborted', 'edit_file was aborted');
      // Written only if the file is still the one read (same device and inode), all or nothing.
      await files.commit([{ path: target.relative, content: after, expect: target.identity, previous: target.bytes }], context.signal);
      return textResult(`Edited ${target.relative} (${matches} replacement${matches === 1 ? '' : 's'}):\n${smallDiff(before, after)}`, {
        details: { path: target.relative, replacements: matches },
      });
    },
  });

  const listTool = defineWorkerTool({
    name: 'list_files',
    description: 'List workspace files matching a glob (e.g. "**/*.md"), relative to the root. Skips .git and node_modules unless the pattern names them; capped at 1000 paths.',
    schema: listSchema,
    executionMode: 'parallel',
    isReadOnly: true,
    describeActivity: (params) => `Listing \`${params.pattern}\``,
    describeCompletedActivity: (params, result) => {
      const count = (result.details as { count?: number } | undefined)?.count;
      return `Listed ${count ?? 0} file${count === 1 ? '' : 's'} matching \`${params.pattern}\``;
    },
    async execute(params, context) {
      const scanned = picomatch.scan(params.pattern);
      const base = scanned.isGlob ? scanned.base : path.posix.dirname(params.pattern);
      // The glob's static base is checked like any path (a symlink out of the workspace is refused
      // by name); the walk itself follows no symlink at all.
      if (base !== '' && base !== '.') await files.resolve(base, context.signal);
      const listing = await listWorkspaceFiles({ files, pattern: params.pattern, signal: context.signal });
      const text =
        listing.files.length === 0
          ? `No files match \`${params.pattern}\`.`
          : `${listing.files.join('\n')}${listing.truncated ? `\n[… stopped at ${listing.files.length} paths; narrow the pattern …]` : ''}`;
      return textResult(truncateMiddle(text, config.limits.maxResultTextChars).text, {
        details: { count: listing.files.length, truncated: listing.truncated },
      });
    },
  });

  return [readTool, writeTool, editTool, listTool];
}
