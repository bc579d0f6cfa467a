import { readFile } from 'node:fs/promises';
import { errorMessage, isToolRuntimeError } from '../../../src/index.js';
import type { CliIo } from '../../cli/cli-io.js';
import { parseCliOptions, type CliOptions } from '../../cli/cli-options.js';
import { ControlPlaneError } from '../domain/control-plane-error.js';
import type { ControlPlaneStore } from '../domain/control-plane-store.js';
import { defaultDataDir } from '../store/default-data-dir.js';
import type { WorkflowDefinition } from '../domain/workflows/workflow-store.js';
import { deadLocalOwners } from '../domain/workflows/runner-owner.js';
import { openControlPlaneStore } from '../store/open-control-plane-store.js';
import { sidecarTaskTurns } from '../domain/workflows/sidecar-task-turns.js';
import { parseWorkflowFile, defaultWorkflowLimits } from '../domain/workflows/validate-workflow-definition.js';
import { WorkflowRunner, type WorkflowRunnerEvent } from '../domain/workflows/workflow-runner.js';
import { startAgentServices } from './start-agent-services.js';
import { runWorkflowAdminCommand, WORKFLOW_ADMIN_USAGE } from './workflow-admin-commands.js';

/** The `workflow run --help` text. */
export const WORKFLOW_RUN_USAGE = `Usage: npm run controller -- workflow run FILE.json [options]
       npm run controller -- workflow resume RUN_ID [options]

Runs one workflow to completion: each task as an isolated task turn that ends through
submit_result, dependents after their dependencies commit. Prints each committed task result as one
JSON line ({"task": ID, "result": VALUE}) on stdout, progress on stderr.

FILE.json: { "name": "...", "max_parallel": 4,
             "tasks": [{ "id": "...", "prompt": "...", "result_schema": { JSON Schema },
                         "depends_on": ["..."], "max_attempts": 2 }] }

Options:
  --data-dir DIR   the SQLite control-plane store (default ~/.local/state/tools-runtime/controller)
  --database URL   postgres://... : the PostgreSQL store several controllers share instead
                   (default DATABASE_URL; the same rule as workflow list, serve and npm start)
  and the model and sidecar flags of npm start: --workspace, --sidecar, --token-file, --ca-file,
  --base-url, --model, --embedded, --stream/--no-stream, --tool-search, --flatten-namespaces,
  --max-model-calls (per task turn), --agent-id, --quiet; and what the task turns get:
  --brain DIR (the started sidecar's knowledge base; task turns get recall and get_page),
  --enable-brain (with --sidecar: the running sidecar's), --skills DIR and --skill NAME,
  --web-fetch, --network MODE, --tools MODULE (a category that opts in to task turns), --hide PATH

\`workflow resume\` runs a run that is still running in the store: committed tasks are kept, tasks
whose runner is gone (killed, or its claim ran out) run again as new attempts, and a task a live
runner holds stays with it while this process runs the rest.

Exit status: 0 when the run succeeded; 1 when it failed, was cancelled or could not run; 2 on bad
usage or an invalid workflow file (one line on stderr).`;

/**
 * `workflow run ...` and `workflow resume ...`: `io.argv` is what follows `workflow`. Returns the
 * exit code (2 for an unknown subcommand).
 */
export async function runWorkflowCommand(io: CliIo): Promise<number> {
  const [sub, ...args] = io.argv;
  if (sub === 'run') return runWorkflowRunCommand(args, io);
  if (sub === 'resume') return runWorkflowResumeCommand(args, io);
  if (sub === 'list' || sub === 'show' || sub === 'cancel') return runWorkflowAdminCommand(sub, args, io);
  const help = sub === undefined || sub === '--help' || sub === '-h';
  (help ? io.stdout : io.stderr).write(`${help ? '' : `error: unknown workflow command "${sub}"\n\n`}${WORKFLOW_RUN_USAGE}\n\n${WORKFLOW_ADMIN_USAGE}\n`);
  return help ? 0 : 2;
}

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

/** The parsed flags of `workflow run` and `workflow resume`. */
interface WorkflowFlags {
  options: CliOptions;
  dataDir: string;
}

/** Parses the flags after the file or run id; returns an exit code on bad usage. */
function parseWorkflowFlags(flags: string[], io: CliIo): WorkflowFlags | number {
  const usage = (message: string) => {
    io.stderr.write(`error: ${message}\n`);
    return 2;
  };
  const { dataDir, rest } = takeDataDir(flags);
  if (dataDir === '') return usage('--data-dir needs a folder');
  if (rest.some((arg) => arg === '--prompt' || arg.startsWith('--prompt=') || arg === '--events-file' || arg.startsWith('--events-file='))) {
    return usage('workflows take their prompts from the workflow file; --prompt and --events-file do not apply');
  }
  try {
    const resolvedDataDir = dataDir ?? defaultDataDir();
    // options.dataDir is the folder the sidecar hides from the model's commands: this run's store.
    return { options: { ...parseCliOptions(rest, io.env), dataDir: resolvedDataDir }, dataDir: resolvedDataDir };
  } catch (error) {
    return usage(errorMessage(error));
  }
}

/**
 * `workflow run FILE.json`: checks the file, stores a new run, runs it in this process on a sidecar
 * and a model chosen by npm start's flags, prints the committed results. Everything it starts is
 * stopped before it returns; on abort (Ctrl-C) the running task turns are aborted and the run is
 * left running in the store, for `workflow resume` or `serve`.
 */
export async function runWorkflowRunCommand(args: string[], io: CliIo): Promise<number> {
  const [file, ...flags] = args;
  if (file === '--help' || file === '-h' || flags.includes('--help')) {
    io.stdout.write(`${WORKFLOW_RUN_USAGE}\n`);
    return 0;
  }
  if (!file || file.startsWith('-')) {
    io.stderr.write('error: workflow run needs the workflow file first: npm run controller -- workflow run FILE.json [options]\n');
    return 2;
  }
  const parsed = parseWorkflowFlags(flags, io);
  if (typeof parsed === 'number') return parsed;
  let definition: WorkflowDefinition;
  try {
    definition = parseWorkflowFile(await readFile(file, 'utf8'));
  } catch (error) {
    const code = error instanceof ControlPlaneError ? undefined : (error as NodeJS.ErrnoException).code;
    io.stderr.write(`error: ${code ? `cannot read the workflow file ${file}: ${code}` : `${file}: ${errorMessage(error)}`}\n`);
    return 2;
  }
  return driveWorkflow(parsed, io, async (store, runner, progress) => {
    const created = await store.workflows.createRun({
      agentId: parsed.options.agentId,
      definition,
      maxRunningPerAgent: defaultWorkflowLimits.maxRunningPerAgent,
    });
    progress(`▶ workflow "${definition.name}": run ${created.runId}, ${definition.tasks.length} tasks, max_parallel ${definition.maxParallel}, store ${store.location}`);
    return created.runId;
  });
}

/**
 * `workflow resume RUN_ID`: runs a run that is still running in the store to the end as `workflow
 * run` does: committed tasks are kept, tasks whose runner is gone (its process ended, or its claim
 * ran out) run again as new attempts; tasks a live runner holds stay with it.
 */
export async function runWorkflowResumeCommand(args: string[], io: CliIo): Promise<number> {
  const [runId, ...flags] = args;
  if (runId === '--help' || runId === '-h' || flags.includes('--help')) {
    io.stdout.write(`${WORKFLOW_RUN_USAGE}\n`);
    return 0;
  }
  if (!runId || runId.startsWith('-')) {
    io.stderr.write('error: workflow resume needs the run id first: npm run controller -- workflow resume RUN_ID [options]\n');
    return 2;
  }
  const parsed = parseWorkflowFlags(flags, io);
  if (typeof parsed === 'number') return parsed;
  return driveWorkflow(parsed, io, async (store, runner, progress) => {
    const run = await store.workflows.getRun(runId);
    if (!run) throw new ControlPlaneError('not_found', `no workflow run "${runId}" in ${store.location}`);
    if (run.state !== 'running') return runId;
    progress(`▶ resuming workflow "${run.name}": run ${runId}, store ${store.location}`);
    const owners = [...new Set(run.tasks.flatMap((task) => (task.state === 'running' && task.owner ? [task.owner] : [])))];
    const gone = new Set(deadLocalOwners(owners));
    const live = owners.filter((owner) => !gone.has(owner));
    // Tasks of a runner that is gone run again here at once; a live runner keeps its tasks (until its claim lapses).
    if (live.length > 0) progress(`  tasks running under ${live.join(', ')} stay with it; this process runs the others and waits for the run to end`);
    return runId;
  });
}

/** Opens the store and the agent's services, runs the run `begin` names, prints its results. */
async function driveWorkflow(
  { options, dataDir }: WorkflowFlags,
  io: CliIo,
  begin: (store: ControlPlaneStore, runner: WorkflowRunner, progress: (line: string) => void) => Promise<string>,
): Promise<number> {
  const progress = (line: string) => {
    if (!options.quiet) io.stderr.write(`${line}\n`);
  };
  const cleanups: Array<() => Promise<void>> = [];
  try {
    const store = await openControlPlaneStore({ dataDir, ...(options.database ? { database: options.database } : {}) });
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
    const runId = await begin(store, runner, progress);
    runner.adopt(runId);
    const run = await runner.waitForRun(runId, { signal: io.signal });
    for (const task of run?.tasks ?? []) {
      if (task.resultJson !== undefined) io.stdout.write(`${JSON.stringify({ task: task.taskId, result: JSON.parse(task.resultJson) as unknown })}\n`);
    }
    if (run?.state === 'succeeded') return 0;
    if (run?.state === 'running') {
      io.stderr.write(`error: the runner stopped before run ${runId} finished; \`workflow resume ${runId}\` finishes it\n`);
      return 1;
    }
    io.stderr.write(`error: workflow ${run?.state ?? 'lost'}: ${(run?.error ?? 'no reason given').split('\n')[0]}\n`);
    return 1;
  } catch (error) {
    const aborted = isToolRuntimeError(error, 'aborted') || io.signal.aborted;
    io.stderr.write(`error: ${aborted ? 'aborted; the run stays running in the store: `workflow resume RUN_ID` (or `serve`) resumes it' : errorMessage(error).split('\n')[0]}\n`);
    return 1;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

/** One progress line for a runner event. */
export function renderRunnerEvent(event: WorkflowRunnerEvent): string {
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
