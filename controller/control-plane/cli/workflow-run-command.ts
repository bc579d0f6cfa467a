import { readFile } from 'node:fs/promises';
import { errorMessage, isToolRuntimeError } from '../../../src/index.js';
import type { CliIo } from '../../cli.js';
import { parseCliOptions, type CliOptions } from '../../cli-options.js';
import { defaultDataDir } from '../store/default-data-dir.js';
import { openSqliteStore } from '../store/sqlite/open-sqlite-store.js';
import { sidecarTaskTurns } from '../workflows/sidecar-task-turns.js';
import { parseWorkflowFile, defaultWorkflowLimits } from '../workflows/validate-workflow-definition.js';
import { WorkflowRunner, type WorkflowRunnerEvent } from '../workflows/workflow-runner.js';
import { startAgentServices } from './start-agent-services.js';

/** The `workflow run --help` text. */
export const WORKFLOW_RUN_USAGE = `Usage: npm run controller -- workflow run FILE.json [options]

Runs one workflow to completion: each task as an isolated task turn that ends through
submit_result, dependents after their dependencies commit. Prints each committed task result as one
JSON line ({"task": ID, "result": VALUE}) on stdout, progress on stderr.

FILE.json: { "name": "...", "max_parallel": 4,
             "tasks": [{ "id": "...", "prompt": "...", "result_schema": { JSON Schema },
                         "depends_on": ["..."], "max_attempts": 2 }] }

Options:
  --data-dir DIR   the control-plane store (default ~/.local/state/tools-runtime/controller)
  and the model and sidecar flags of npm start: --workspace, --sidecar, --token-file, --base-url,
  --model, --embedded, --stream/--no-stream, --tool-search, --flatten-namespaces,
  --max-model-calls (per task turn), --agent-id, --quiet

Exit status: 0 when the run succeeded; 1 when it failed, was cancelled or could not run; 2 on bad
usage or an invalid workflow file (one line on stderr).`;

/** Takes `--data-dir` (both spellings) out of `args`. */
function takeDataDir(args: string[]): { dataDir?: string; rest: string[] } {
  const rest: string[] = [];
  let dataDir: string | undefined;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === '--data-dir') dataDir = args[++index] ?? '';
    else if (arg.startsWith('--data-dir=')) dataDir = arg.slice('--data-dir='.length);
    else rest.push(arg);
  }
  return { ...(dataDir !== undefined ? { dataDir } : {}), rest };
}

/**
 * `workflow run FILE.json`: checks the file, stores a new run, runs it in this process on a sidecar
 * and a model chosen by npm start's flags, prints the committed results. Everything it starts is
 * stopped before it returns; on abort (Ctrl-C) the running task turns are aborted and the run is
 * left running in the store, for `serve` to resume.
 */
export async function runWorkflowRunCommand(args: string[], io: CliIo): Promise<number> {
  const [file, ...flags] = args;
  if (file === '--help' || file === '-h' || flags.includes('--help')) {
    io.stdout.write(`${WORKFLOW_RUN_USAGE}\n`);
    return 0;
  }
  const usage = (message: string) => {
    io.stderr.write(`error: ${message}\n`);
    return 2;
  };
  if (!file || file.startsWith('-')) return usage('workflow run needs the workflow file first: npm run controller -- workflow run FILE.json [options]');
  const { dataDir, rest } = takeDataDir(flags);
  if (dataDir === '') return usage('--data-dir needs a folder');
  if (rest.some((arg) => arg === '--prompt' || arg.startsWith('--prompt=') || arg === '--events-file' || arg.startsWith('--events-file='))) {
    return usage('workflow run takes its prompts from the workflow file; --prompt and --events-file do not apply');
  }
  let options: CliOptions;
  try {
    options = parseCliOptions(rest, io.env);
  } catch (error) {
    return usage(errorMessage(error));
  }
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return usage(`cannot read the workflow file ${file}: ${(error as NodeJS.ErrnoException).code ?? errorMessage(error)}`);
  }
  let definition;
  try {
    definition = parseWorkflowFile(text);
  } catch (error) {
    return usage(`${file}: ${errorMessage(error)}`);
  }

  const progress = (line: string) => {
    if (!options.quiet) io.stderr.write(`${line}\n`);
  };
  const cleanups: Array<() => Promise<void>> = [];
  try {
    const store = await openSqliteStore({ dataDir: dataDir ?? defaultDataDir() });
    cleanups.push(() => store.close());
    const { client, model } = await startAgentServices(options, cleanups, io.signal, progress);
    const runner = new WorkflowRunner({
      store,
      model,
      openTaskTurn: sidecarTaskTurns(client),
      turnOptions: { toolSearch: options.toolSearch, flattenNamespaces: options.flattenNamespaces, maxModelCalls: options.maxModelCalls },
      onEvent: (event) => progress(renderRunnerEvent(event)),
    });
    cleanups.push(() => runner.close());
    const created = await store.workflows.createRun({
      agentId: options.agentId,
      definition,
      maxRunningPerAgent: defaultWorkflowLimits.maxRunningPerAgent,
      owner: runner.owner,
      leaseMs: runner.leaseMs,
    });
    progress(`▶ workflow "${definition.name}": run ${created.runId}, ${definition.tasks.length} tasks, max_parallel ${definition.maxParallel}, store ${store.location}`);
    runner.adopt(created.runId);
    const run = await runner.waitForRun(created.runId, { signal: io.signal });
    for (const task of run?.tasks ?? []) {
      if (task.resultJson !== undefined) io.stdout.write(`${JSON.stringify({ task: task.taskId, result: JSON.parse(task.resultJson) as unknown })}\n`);
    }
    if (run?.state === 'succeeded') return 0;
    io.stderr.write(`error: workflow ${run?.state ?? 'lost'}: ${(run?.error ?? 'no reason given').split('\n')[0]}\n`);
    return 1;
  } catch (error) {
    const aborted = isToolRuntimeError(error, 'aborted') || io.signal.aborted;
    io.stderr.write(`error: ${aborted ? 'aborted; the run stays running in the store, and `serve` resumes it' : errorMessage(error).split('\n')[0]}\n`);
    return 1;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

function renderRunnerEvent(event: WorkflowRunnerEvent): string {
  switch (event.type) {
    case 'task-started':
      return `▶ task ${event.taskId}: attempt ${event.attempt}`;
    case 'task-committed':
      return `✔ task ${event.taskId}: committed (${Math.round(event.turnMs)} ms)`;
    case 'attempt-failed':
      return `✖ task ${event.taskId}: attempt ${event.attempt} failed${event.taskFailed ? ', no attempts left' : ''}: ${event.reason}`;
    case 'run-finished':
      return `■ run ${event.state}${event.error ? `: ${event.error}` : ''}`;
  }
}
