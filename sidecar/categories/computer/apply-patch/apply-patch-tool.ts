import { z } from 'zod';
import { defineWorkerTool, textResult, ToolRuntimeError, type WorkerAgentTool } from '../../../../src/index.js';
import { decodeText, MAX_TEXT_FILE_BYTES } from '../file-tools.js';
import type { FileChange, FileIdentity, WorkspaceFiles } from '../files/workspace-files.js';
import { applyHunks } from './apply-hunks.js';
import { parsePatch, type PatchOperation } from './parse-patch.js';

/** The tool's name: the controller sends native `apply_patch_call` items to it under this name. */
export const APPLY_PATCH_TOOL_NAME = 'apply_patch';

const schema = z.object({
  patch: z
    .string()
    .min(1)
    .describe('The whole patch, from "*** Begin Patch" to "*** End Patch".'),
});

const DESCRIPTION = [
  'Edit workspace files with a patch: add, update (with hunks), move and delete files, several at once, all or nothing.',
  'Format:',
  '*** Begin Patch',
  '*** Add File: path/new.txt      (every following line starts with "+")',
  '*** Delete File: path/old.txt   (nothing follows)',
  '*** Update File: path/file.py   (optionally followed by "*** Move to: path/renamed.py")',
  '@@ def greet():                 (a hunk: "@@", optionally with a line that comes just before it, e.g. its function or class)',
  ' context line (starts with a space)',
  '-removed line',
  '+added line',
  '*** End Patch',
  'Give about 3 lines of context before and after each change, exactly as the file has them; hunks of one file in file order; "*** End of File" after a hunk that ends at the file\'s end. Paths are relative to the workspace.',
].join('\n');

/** What the patch does to one path, as computed in memory before anything is written. */
interface PendingFile {
  path: string;
  /** What was on disk when the patch was read. */
  existed: boolean;
  identity?: FileIdentity;
  previous?: Buffer;
  /** Whether the file exists in the patch's state so far. */
  exists: boolean;
  /** Its text in the patch's state so far (decoded from `previous` when first needed). */
  text?: string;
  /** The result's one-line summary, e.g. `M src/app.ts (+3 -1)`. */
  summary?: string;
}

/** Names the files a patch touches, for the activity label, without failing on a malformed one. */
function namesIn(patch: string): string[] {
  const names: string[] = [];
  for (const match of patch.matchAll(/^\s*\*\*\* (?:Add|Update|Delete) File:\s*(.+?)\s*$/gm)) names.push(match[1]!);
  return names;
}

function describeNames(names: string[]): string {
  if (names.length === 0) return 'files';
  if (names.length <= 3) return names.join(', ');
  return `${names.slice(0, 2).join(', ')} and ${names.length - 2} more files`;
}

/**
 * apply_patch: a V4A patch (parse-patch.ts) applied to the workspace all or nothing. Every target is
 * read through the safe walk (`files`) and checked against the sandbox's rule for writing before
 * anything changes; all results are computed in memory; then `files.commit` writes each file by
 * temp file and rename and only then deletes (undoing what it did if a later step fails). A patch
 * that does not apply leaves every file as it was and says which hunk, what it expected and where.
 * Destructive and sequential; the function tool and the controller's native `apply_patch_call`
 * items both land here.
 */
export function createApplyPatchTool(options: { files: WorkspaceFiles }): WorkerAgentTool {
  const { files } = options;
  return defineWorkerTool({
    name: APPLY_PATCH_TOOL_NAME,
    description: DESCRIPTION,
    schema,
    executionMode: 'sequential',
    isDestructive: true,
    // The Responses API's own `apply_patch` tool runs here: the controller sends each apply_patch_call
    // operation as this tool's patch text (controller/loop/native-calls.ts).
    nativeTool: 'apply_patch',
    describeActivity: (params) => `Patching ${describeNames(namesIn(params.patch))}`,
    describeCompletedActivity: (params, result) => {
      const count = (result.details as { files?: unknown[] } | undefined)?.files?.length;
      return count === undefined ? `Patched ${describeNames(namesIn(params.patch))}` : `Patched ${count} file${count === 1 ? '' : 's'}`;
    },
    async execute(params, context) {
      const operations = parsePatch(params.patch);
      const pending = new Map<string, PendingFile>();
      const notes: string[] = [];
      const load = async (given: string): Promise<PendingFile> => {
        const read = await files.read(given, { access: 'write', maxBytes: MAX_TEXT_FILE_BYTES, signal: context.signal, whole: true, missingOk: true });
        const known = pending.get(read.relative);
        if (known) return known;
        const file: PendingFile = read.exists
          ? { path: read.relative, existed: true, exists: true, identity: read.identity, previous: read.bytes }
          : { path: read.relative, existed: false, exists: false };
        pending.set(read.relative, file);
        return file;
      };
      for (const operation of operations) await applyOperation(operation, load, notes);
      const changes: FileChange[] = [];
      const summaries: string[] = [];
      for (const file of pending.values()) {
        if (file.summary) summaries.push(file.summary);
        if (file.exists) {
          if (file.text === undefined || (file.previous !== undefined && file.previous.equals(Buffer.from(file.text)))) continue;
          changes.push({ path: file.path, content: file.text, expect: file.existed ? file.identity! : 'absent', previous: file.previous });
        } else if (file.existed) {
          changes.push({ path: file.path, delete: true, expect: file.identity! });
        }
      }
      if (context.signal.aborted) throw new ToolRuntimeError('aborted', 'apply_patch was aborted before it wrote anything');
      await files.commit(changes, context.signal);
      const text = [`Done. The patch changed ${summaries.length} file${summaries.length === 1 ? '' : 's'}:`, ...summaries, ...notes.map((note) => `Note: ${note}`)].join('\n');
      return textResult(text, { details: { files: summaries, notes } });
    },
  });
}

/** Applies one operation to the in-memory state of the files it touches. */
async function applyOperation(operation: PatchOperation, load: (given: string) => Promise<PendingFile>, notes: string[]): Promise<void> {
  const failed = (message: string) => new ToolRuntimeError('tool_failed', `apply_patch: ${message}; nothing was changed`);
  if (operation.kind === 'add') {
    const file = await load(operation.path);
    const replaced = file.exists;
    file.exists = true;
    file.text = operation.lines.map((line) => `${line}\n`).join('');
    file.summary = `A ${file.path} (+${operation.lines.length}${replaced ? ', replaced the file that was there' : ''})`;
    return;
  }
  const file = await load(operation.path);
  if (!file.exists) {
    throw failed(`${operation.kind === 'delete' ? 'Delete File' : 'Update File'}: ${file.path} does not exist${operation.kind === 'update' ? '; use "*** Add File:" to create it' : ''}`);
  }
  if (operation.kind === 'delete') {
    file.exists = false;
    file.text = undefined;
    file.summary = `D ${file.path}`;
    return;
  }
  file.text ??= decodeText(file.previous ?? Buffer.alloc(0), file.path);
  const applied = applyHunks(file.path, file.text, operation.hunks);
  notes.push(...applied.notes);
  const counts = `(+${applied.added} -${applied.removed})`;
  if (operation.moveTo === undefined) {
    file.text = applied.text;
    file.summary = `M ${file.path} ${counts}`;
    return;
  }
  const target = await load(operation.moveTo);
  if (target === file) {
    file.text = applied.text;
    file.summary = `M ${file.path} ${counts}`;
    return;
  }
  const replaced = target.exists;
  file.exists = false;
  file.text = undefined;
  file.summary = undefined;
  target.exists = true;
  target.text = applied.text;
  target.summary = `R ${file.path} -> ${target.path} ${counts}${replaced ? ', replaced the file that was there' : ''}`;
}
