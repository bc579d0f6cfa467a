// A small module of your own tools for the sidecar: `tools-runtime-sidecar --workspace DIR --tools
// ./examples/word-tools.js` (or `npm run sidecar -- ... --tools ./examples/word-tools.js` here).
// Plain JavaScript, so plain `node` loads it; docs/package.md shows the TypeScript form.
import { once } from 'node:events';
import { readFile, appendFile } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import { z } from 'zod';
import { defineWorkerTool, textResult, ToolRuntimeError } from 'tools-runtime';
import { defineToolCategory, policyFor, startProcess } from 'tools-runtime/sidecar';

/** A path inside the workspace, or a ToolRuntimeError the model can read. */
function insideWorkspace(workspace, path) {
  const absolute = resolve(workspace, path);
  const inside = relative(workspace, absolute);
  if (inside.startsWith('..') || isAbsolute(inside)) throw new ToolRuntimeError('invalid_arguments', `${path} is outside the workspace`);
  return absolute;
}

export default defineToolCategory({
  name: 'words',
  // Also offered in workflow task turns: count_words only reads.
  workflowTask: true,
  create({ config, turn }) {
    const countWords = defineWorkerTool({
      name: 'count_words',
      description: 'Counts the words of a text file in the workspace.',
      schema: z.object({ path: z.string().describe('a path relative to the workspace') }),
      executionMode: 'parallel',
      isReadOnly: true,
      describeActivity: ({ path }) => `Counting words in ${path}`,
      async execute({ path }, { signal, emit }) {
        const text = await readFile(insideWorkspace(config.workspace, path), { encoding: 'utf8', signal });
        const words = text.split(/\s+/).filter(Boolean).length;
        await emit({ kind: 'words.counted', payload: { path, words } });
        return textResult(`${path} has ${words} words.`, { details: { words } });
      },
    });
    // A task turn gets only the read-only tool.
    if (turn.kind === 'workflow_task') return [countWords];
    // A tool that starts a program does it through startProcess, as run_command does: under the
    // sidecar's sandbox (as the turn tightens it), its process group killed with the call.
    const countLines = defineWorkerTool({
      name: 'count_lines',
      description: 'Counts the lines of a text file in the workspace with wc -l.',
      schema: z.object({ path: z.string() }),
      executionMode: 'parallel',
      isReadOnly: true,
      async execute({ path }, { signal }) {
        const started = await startProcess({
          argv: ['wc', '-l', insideWorkspace(config.workspace, path)],
          cwd: config.workspace,
          env: { PATH: '/usr/bin:/bin' },
          policy: policyFor(config, turn.sandbox, turn.agentId),
        });
        const kill = () => started.killGroup('SIGKILL');
        signal.addEventListener('abort', kill, { once: true });
        let output = '';
        started.child.stdout.setEncoding('utf8').on('data', (chunk) => (output += chunk));
        try {
          const [code] = await once(started.child, 'close');
          if (code !== 0) throw new ToolRuntimeError('tool_failed', `wc exited with ${code}`);
        } finally {
          signal.removeEventListener('abort', kill);
        }
        const lines = Number.parseInt(output, 10);
        return textResult(`${path} has ${lines} lines.`, { details: { lines, sandboxed: started.sandboxed } });
      },
    });
    const appendNote = defineWorkerTool({
      name: 'append_note',
      description: 'Appends a line to NOTES.md in the workspace.',
      schema: z.object({ line: z.string().min(1).max(500) }),
      isDestructive: true,
      describeActivity: () => 'Appending to NOTES.md',
      async execute({ line }, { signal }) {
        signal.throwIfAborted();
        await appendFile(insideWorkspace(config.workspace, 'NOTES.md'), `${line}\n`);
        return textResult('Appended one line to NOTES.md.');
      },
    });
    return [countWords, countLines, appendNote];
  },
});
