import { parseArgs } from 'node:util';
import { errorMessage } from '../../../src/index.js';
import { parseArgsMessage } from '../../../src/cli-usage.js';
import { WorkflowRunState, WorkflowTaskState, type ControlRequest, type WorkflowRun } from '../../../src/gen/toolruntime/v1/control_plane.js';
import type { CliIo } from '../../cli/cli-io.js';
import { answerControlRequest } from '../grpc/answer-control-request.js';
import { defaultDataDir } from '../store/default-data-dir.js';
import { openControlPlaneStore, resolveDatabaseOption } from '../store/open-control-plane-store.js';
import type { ControlPlaneStore } from '../domain/control-plane-store.js';

/** The usage of the operator's workflow commands. */
export const WORKFLOW_ADMIN_USAGE = `Usage: npm run controller -- workflow list [--agent-id ID] [--limit N] [STORE]
       npm run controller -- workflow show RUN_ID [STORE]
       npm run controller -- workflow cancel RUN_ID [--reason TEXT] [STORE]
RUN_ID: a run's id, or a prefix of it that only one run has
STORE: --data-dir DIR (the SQLite store; default ~/.local/state/tools-runtime/controller), or
       --database postgres://... (default DATABASE_URL): the store several controllers share

Reads (and for cancel, changes) the control-plane store directly, as an operator: every agent's runs
unless --agent-id names one. Prints JSON with the proto's snake_case field names (one run a line for
list; show adds each attempt and the runner that claimed it). A cancelled run's task turns stop at once when this process runs them,
else at their runner's next claim renewal (within a second).`;

/** `startedAt` -> `started_at`: the JSON output uses the proto's snake_case names throughout. */
function snakeCaseKeys(value: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).map(([key, field]) => [key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`), field]));
}

/** A run as printed: states by name, results parsed. */
function printable(run: WorkflowRun | undefined): unknown {
  if (!run) return null;
  const parse = (text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
  return {
    run_id: run.runId,
    agent_id: run.agentId,
    name: run.name,
    state: WorkflowRunState[run.state]?.replace('WORKFLOW_RUN_STATE_', '').toLowerCase(),
    created_at: run.createdAt,
    ...(run.finishedAt ? { finished_at: run.finishedAt } : {}),
    ...(run.error ? { error: run.error } : {}),
    tasks: run.tasks.map((task) => ({
      id: task.taskId,
      state: WorkflowTaskState[task.state]?.replace('WORKFLOW_TASK_STATE_', '').toLowerCase(),
      attempts: task.attempts,
      ...(task.resultJson ? { result: parse(task.resultJson) } : {}),
      ...(task.error ? { error: task.error } : {}),
    })),
  };
}

/**
 * `workflow list | show | cancel`: the operator's view of the store, through the same control
 * handlers the tools use. Returns the exit code: 0, 1 when the store refuses (unknown run, a run
 * already finished), 2 on bad usage.
 */
export async function runWorkflowAdminCommand(sub: 'list' | 'show' | 'cancel', args: string[], io: CliIo): Promise<number> {
  let values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: { 'data-dir': { type: 'string' }, database: { type: 'string' }, 'agent-id': { type: 'string' }, limit: { type: 'string' }, reason: { type: 'string' }, help: { type: 'boolean' } },
    }));
  } catch (error) {
    io.stderr.write(`error: ${parseArgsMessage(error)}\n(npm run controller -- workflow --help lists the options)\n`);
    return 2;
  }
  if (values.help) {
    io.stdout.write(`${WORKFLOW_ADMIN_USAGE}\n`);
    return 0;
  }
  const runId = positionals[0] ?? '';
  const limit = Number(values.limit ?? 50);
  if ((sub !== 'list' && (runId === '' || positionals.length > 1)) || (sub === 'list' && positionals.length > 0) || !Number.isInteger(limit) || limit < 1) {
    io.stderr.write(`error: bad arguments for workflow ${sub}\n\n${WORKFLOW_ADMIN_USAGE}\n`);
    return 2;
  }
  const agentId = values['agent-id'] ?? '';
  let store;
  try {
    const database = resolveDatabaseOption(values.database, io.env);
    store = await openControlPlaneStore({ dataDir: values['data-dir'] ?? defaultDataDir(), ...(database ? { database } : {}) });
  } catch (error) {
    io.stderr.write(`error: ${errorMessage(error)}\n`);
    return 1;
  }
  try {
    return await answer(sub, store, { agentId, limit, reason: values.reason, runId: await wholeRunId(store, runId, agentId) }, io);
  } catch (error) {
    io.stderr.write(`error: ${errorMessage(error)}\n`);
    return 1;
  } finally {
    await store.close();
  }
}

/** The most runs a prefix is looked up among (the newest first). */
const PREFIX_SCAN = 10_000;

/**
 * The run `given` names: itself when a run has that id, else the one run whose id starts with it
 * (as `approvals` takes an id's prefix); as given when none does (the handler then says "no run").
 *
 * @throws Error when several runs start with it.
 */
async function wholeRunId(store: ControlPlaneStore, given: string, agentId: string): Promise<string> {
  if (given === '' || (await store.workflows.getRun(given))) return given;
  const matches = (await store.workflows.listRuns({ ...(agentId ? { agentId } : {}), limit: PREFIX_SCAN })).filter((run) => run.runId.startsWith(given));
  if (matches.length > 1) throw new Error(`${matches.length} workflow runs start with "${given}" (${matches.slice(0, 5).map((run) => run.runId).join(', ')}${matches.length > 5 ? ', …' : ''}); give more of the id`);
  return matches[0]?.runId ?? given;
}

async function answer(
  sub: 'list' | 'show' | 'cancel',
  store: ControlPlaneStore,
  { agentId, limit, reason, runId }: { agentId: string; limit: number; reason: string | undefined; runId: string },
  io: CliIo,
): Promise<number> {
  const request: ControlRequest['request'] =
    sub === 'list'
      ? { $case: 'listWorkflows', value: { agentId, limit } }
      : sub === 'show'
        ? { $case: 'showWorkflow', value: { agentId, runId } }
        : { $case: 'cancelWorkflow', value: { agentId, runId, reason: reason ?? 'cancelled by an operator' } };
  {
    const { reply } = await answerControlRequest({ store, request: { request } });
    switch (reply?.$case) {
      case 'listWorkflows':
        for (const run of reply.value.runs) io.stdout.write(`${JSON.stringify(printable(run))}\n`);
        return 0;
      case 'showWorkflow': {
        // The operator's view adds the attempt log: when each attempt ran, how it ended, and which runner (host:pid:id) claimed it.
        const attempts = reply.value.run ? await store.workflows.listAttempts(reply.value.run.runId) : [];
        io.stdout.write(`${JSON.stringify({ ...(printable(reply.value.run) as object), attempts: attempts.map(snakeCaseKeys) }, null, 2)}\n`);
        return 0;
      }
      case 'cancelWorkflow':
        io.stdout.write(`${JSON.stringify(printable(reply.value.run), null, 2)}\n`);
        return 0;
      case 'error':
        // The handlers speak to the model ("workflow_list shows the runs"); an operator has the CLI command.
        io.stderr.write(`error: ${reply.value.code}: ${reply.value.message.replace('workflow_list shows the runs', '`npm run controller -- workflow list` shows the runs')}\n`);
        return 1;
      default:
        io.stderr.write('error: the control plane gave no answer\n');
        return 1;
    }
  }
}
