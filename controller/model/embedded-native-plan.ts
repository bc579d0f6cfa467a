/**
 * The embedded model's steps with the Responses API's own coding tools: when a request offers
 * `{ type: 'shell' }` it runs two commands in one `shell_call`; when it offers `{ type: 'apply_patch' }`
 * it adds a line to the README with an `apply_patch_call` (`update_file`, a V4A hunk). Each step
 * happens once per turn, derived from the items so far, as the rest of the plan is.
 */
import { isJSONObject } from '../../src/index.js';
import type { ResponseItem } from './responses-model.js';

let counter = 0;
const nextId = (prefix: string) => `${prefix}_${Date.now().toString(36)}${(++counter).toString(36).padStart(4, '0')}`;

/** The commands of the embedded model's one shell call. */
export const EMBEDDED_SHELL_COMMANDS = ['ls -A', 'wc -l README.md'];

/** The line the embedded model's patch appends after the README's first line. */
export const EMBEDDED_PATCH_LINE = '> Looked over by the embedded model (an apply_patch call).';

/** Which of the provider's own tools a request offers. */
function offered(tools: unknown): { shell: boolean; applyPatch: boolean } {
  const list = Array.isArray(tools) ? tools.filter(isJSONObject) : [];
  return { shell: list.some((tool) => tool.type === 'shell'), applyPatch: list.some((tool) => tool.type === 'apply_patch') };
}

/** The first line of a README read so far, as the patch's anchor (the file's first line). */
function readmeFirstLine(input: ResponseItem[]): string | undefined {
  for (const item of input) {
    if (item.type !== 'function_call_output' || typeof item.output !== 'string') continue;
    const lines = item.output.split('\n');
    // read_file's header (`README.md: lines 1-11 of 11`), not a listing that names the README.
    if (!/^README(\.md)?: lines /i.test(lines[0] ?? '')) continue;
    const first = lines[1]?.replace(/^\s*\d+\t/, '');
    if (first !== undefined && first.trim() !== '') return first;
  }
  return undefined;
}

/**
 * The next native step, or undefined when there is none left (or none is offered): one
 * `shell_call`, then one `apply_patch_call` that puts `EMBEDDED_PATCH_LINE` under the README's
 * first line (only once the README was read, so the hunk's context is real).
 */
export function planNativeStep(input: ResponseItem[], tools: unknown): ResponseItem[] | undefined {
  const offers = offered(tools);
  if (offers.shell && !input.some((item) => item.type === 'shell_call')) {
    return [
      {
        type: 'shell_call',
        id: nextId('sh'),
        call_id: nextId('call_shell'),
        action: { commands: EMBEDDED_SHELL_COMMANDS, timeout_ms: 10_000, max_output_length: 4_000 },
        status: 'completed',
      },
    ];
  }
  const first = readmeFirstLine(input);
  if (offers.applyPatch && first !== undefined && !input.some((item) => item.type === 'apply_patch_call')) {
    return [
      {
        type: 'apply_patch_call',
        id: nextId('ap'),
        call_id: nextId('call_patch'),
        operation: { type: 'update_file', path: 'README.md', diff: `@@\n ${first}\n+${EMBEDDED_PATCH_LINE}\n` },
        status: 'completed',
      },
    ];
  }
  return undefined;
}

/** The answer's lines about the native calls' outputs (empty when none was made). */
export function nativeAnswerLines(input: ResponseItem[]): string[] {
  const lines: string[] = [];
  for (const item of input) {
    if (item.type === 'shell_call_output' && Array.isArray(item.output)) {
      const entries = item.output.filter(isJSONObject);
      const described = entries.map((entry, index) => {
        const outcome = isJSONObject(entry.outcome) ? entry.outcome : {};
        const status = outcome.type === 'timeout' ? 'timed out' : `exit ${String(outcome.exit_code)}`;
        const firstLine = String(entry.stdout ?? '').split('\n')[0] || String(entry.stderr ?? '').split('\n')[0] || '(no output)';
        return `\`${EMBEDDED_SHELL_COMMANDS[index] ?? '?'}\` (${status}): ${firstLine}`;
      });
      lines.push(`- shell ran ${entries.length} command${entries.length === 1 ? '' : 's'}: ${described.join('; ')}.`);
    }
    if (item.type === 'apply_patch_call_output') {
      const output = String(item.output ?? '').split('\n')[0];
      lines.push(item.status === 'completed' ? `- apply_patch updated README.md: ${output}` : `- apply_patch did not apply: ${output}`);
    }
  }
  return lines;
}
