// What the control plane adds to workflow task turns. A real sidecar child (the real task catalog,
// submit_result), the embedded model in process, a real SQLite store in a temp folder, the real
// WorkflowRunner. Per task turn, the controller's own work (store writes, scheduling, prompt
// building, re-validation, commit) is the run's wall time minus the time spent inside the task
// turns themselves (opening the turn, model calls, sidecar calls, closing), with max_parallel 1 so
// the two do not overlap; it is set against that task turn time. Then a 200-task workflow (20
// chains of 10) at max_parallel 1 and 16.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqliteStore } from '../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import type { WorkflowDefinition } from '../../controller/control-plane/domain/workflows/workflow-store.js';
import { sidecarTaskTurns } from '../../controller/control-plane/domain/workflows/sidecar-task-turns.js';
import { WorkflowRunner } from '../../controller/control-plane/domain/workflows/workflow-runner.js';
import { EMBEDDED_MODEL_NAME, startEmbeddedModel } from '../../controller/model/embedded-model.js';
import { createOpenAIResponsesModel } from '../../controller/model/openai-responses-model.js';
import { createSidecarClient } from '../../controller/sidecar-client/create-sidecar-client.js';
import { spawnSidecar } from '../../controller/sidecar-client/spawn-sidecar.js';
import { quantile, type BenchRow } from '../bench-row.js';
import { workflowStoreRows } from './workflow-store.js';

const OVERHEAD_TASKS = 60;
const WARM_UP_TASKS = 20;
const BIG_TASKS = 200;
const CHAINS = 20;
const OPENS = 30;

const schema = {
  type: 'object',
  properties: { summary: { type: 'string', minLength: 3 }, score: { type: 'integer', minimum: 1, maximum: 5 }, tags: { type: 'array', items: { type: 'string' }, minItems: 1 } },
  required: ['summary', 'score', 'tags'],
  additionalProperties: false,
};

function definition(name: string, count: number, maxParallel: number, chains: number): WorkflowDefinition {
  return {
    name,
    maxParallel,
    tasks: Array.from({ length: count }, (_, index) => ({
      id: `t${index}`,
      prompt: `Summarise part ${index} of the report and score it.`,
      resultSchema: schema,
      dependsOn: chains > 0 && index >= chains ? [`t${index - chains}`] : [],
      maxAttempts: 2,
    })),
  };
}

export async function run(): Promise<BenchRow[]> {
  // First, before the sidecar and the model share the cores: the store's own paths, old against new.
  const storeRows = await workflowStoreRows();
  const scratch = mkdtempSync(join(tmpdir(), 'bench-workflows-'));
  cpSync(fileURLToPath(new URL('../../controller/sample-workspace/', import.meta.url)), join(scratch, 'workspace'), { recursive: true });
  const sidecar = await spawnSidecar({ workspace: join(scratch, 'workspace'), extraArgs: ['--state-dir', join(scratch, 'state')] });
  const embedded = await startEmbeddedModel();
  const client = createSidecarClient({ address: sidecar.address, token: sidecar.token });
  const store = await openSqliteStore({ dataDir: join(scratch, 'data') });
  const model = createOpenAIResponsesModel({ model: EMBEDDED_MODEL_NAME, apiKey: 'embedded-no-key', baseURL: embedded.baseURL, stream: true });
  try {
    /** Runs one workflow to the end; returns its wall time and each committed task's turn time. */
    const runWorkflow = async (workflow: WorkflowDefinition) => {
      const turnMs: number[] = [];
      const runner = new WorkflowRunner({
        store,
        model,
        openTaskTurn: sidecarTaskTurns(client),
        onEvent: (event) => {
          if (event.type === 'task-committed') turnMs.push(event.turnMs);
          if (event.type === 'attempt-failed') throw new Error(`bench task failed: ${event.reason}`);
        },
      });
      try {
        const start = performance.now();
        const created = await store.workflows.createRun({ agentId: 'bench', definition: workflow, maxRunningPerAgent: 100 });
        runner.adopt(created.runId);
        const finished = await runner.waitForRun(created.runId, { signal: AbortSignal.timeout(600_000) });
        const wallMs = performance.now() - start;
        if (finished?.state !== 'succeeded') throw new Error(`bench workflow ${finished?.state}: ${finished?.error}`);
        return { wallMs, turnMs };
      } finally {
        await runner.close();
      }
    };

    await runWorkflow(definition('warm-up', WARM_UP_TASKS, 4, 0));
    // Opening a task turn against opening a text turn on the same sidecar: the difference is what
    // assembling the task catalog (submit_result over the task's schema) costs the sidecar.
    const openMs = { task: [] as number[], text: [] as number[] };
    for (let index = 0; index < OPENS * 2; index++) {
      const kind = index % 2 === 0 ? 'workflow_task' : 'text';
      const started = performance.now();
      const turn = await client.openTurn({ agentId: 'bench', turnId: `open-${index}`, kind, ...(kind === 'workflow_task' ? { resultSchemaJson: JSON.stringify(schema) } : {}) });
      (kind === 'text' ? openMs.text : openMs.task).push(performance.now() - started);
      await turn.close({ timeoutMs: 5_000 });
    }
    const serial = await runWorkflow(definition('overhead', OVERHEAD_TASKS, 1, 0));
    const turnTotal = serial.turnMs.reduce((sum, value) => sum + value, 0);
    const overheadPerTask = (serial.wallMs - turnTotal) / OVERHEAD_TASKS;
    const turnMean = turnTotal / OVERHEAD_TASKS;

    const big1 = await runWorkflow(definition('big-1', BIG_TASKS, 1, CHAINS));
    const big16 = await runWorkflow(definition('big-16', BIG_TASKS, 16, CHAINS));
    const big1Turns = big1.turnMs.reduce((sum, value) => sum + value, 0);
    return [
      ...storeRows,
      {
        suite: 'workflows',
        name: 'open a workflow task turn (the sidecar assembles submit_result)',
        value: quantile(openMs.task, 0.5),
        unit: 'ms p50',
        reference: `open a text turn on the same sidecar, ${quantile(openMs.text, 0.5).toFixed(1)} ms p50`,
        ratio: quantile(openMs.task, 0.5) / quantile(openMs.text, 0.5),
        note: `${OPENS} of each, interleaved; the task turns' time below includes it`,
      },
      {
        suite: 'workflows',
        name: `controller overhead per task turn (store writes, scheduling, re-validation; ${OVERHEAD_TASKS} tasks, max_parallel 1)`,
        value: overheadPerTask,
        unit: 'ms mean',
        reference: `the same task turns' model + sidecar time, ${turnMean.toFixed(1)} ms mean (p50 ${quantile(serial.turnMs, 0.5).toFixed(1)})`,
        ratio: overheadPerTask / turnMean,
        note: 'run wall time minus the time inside the task turns, per task; lower is better',
      },
      {
        suite: 'workflows',
        name: `${BIG_TASKS}-task workflow (${CHAINS} chains of ${BIG_TASKS / CHAINS}), embedded model, max_parallel 1`,
        value: big1.wallMs,
        unit: 'ms wall',
        reference: `the sum of its task turns, ${Math.round(big1Turns).toLocaleString('en-US')} ms`,
        ratio: big1.wallMs / big1Turns,
        note: '1.00× would be no controller cost at all',
      },
      {
        suite: 'workflows',
        name: `${BIG_TASKS}-task workflow (${CHAINS} chains of ${BIG_TASKS / CHAINS}), embedded model, max_parallel 16`,
        value: big16.wallMs,
        unit: 'ms wall',
        reference: 'the same workflow at max_parallel 1',
        ratio: big16.wallMs / big1.wallMs,
        note: 'lower is better; 2 cores shared by the model, the sidecar and the controller bound it',
      },
    ];
  } finally {
    client.close();
    await store.close();
    await embedded.close();
    await sidecar.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}
