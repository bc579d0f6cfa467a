import { errorMessage, type Logger } from '../../../src/index.js';
import type { RunTurnOptions } from '../../loop/run-turn.js';
import type { ResponsesModel } from '../../model/responses-model.js';
import type { SidecarClient } from '../../sidecar-client/create-sidecar-client.js';
import type { ClientRequestHandler } from '../../sidecar-client/sidecar-types.js';
import { answerControlRequest, type WorkflowRunnerHook } from '../grpc/answer-control-request.js';
import type { ControlPlaneStore } from '../domain/control-plane-store.js';
import { openControlPlaneStore } from '../store/open-control-plane-store.js';
import type { WorkflowRunRecord } from '../domain/workflows/workflow-store.js';
import { sidecarTaskTurns } from '../domain/workflows/sidecar-task-turns.js';
import { WorkflowRunner, type WorkflowRunnerEvent } from '../domain/workflows/workflow-runner.js';

/** The control plane of one `npm start` turn. */
export interface TurnControlPlane {
  /** Give it to `openTurn` (with `controlPlane: true` in the context). */
  onClientRequest: ClientRequestHandler;
  /**
   * Waits for the workflows this turn started to finish (they run in this process) and returns
   * them. Throws ToolRuntimeError `aborted` when `signal` aborts; the runs then stay running in the
   * store, for `workflow resume` or `serve`.
   */
  waitForStartedRuns(signal: AbortSignal): Promise<WorkflowRunRecord[]>;
  /**
   * Waits for the runs this turn started and reports each (state, committed results) through
   * `progress`. Never throws: on abort it says how to resume them.
   */
  reportStartedRuns(signal: AbortSignal, progress: (line: string) => void): Promise<void>;
  /** Stops the runner (running task turns are aborted, their runs left to resume) and closes the store. */
  close(): Promise<void>;
}

/**
 * The control plane for the CLI's text turn: answers the turn's control requests as its agent,
 * against the store in `dataDir` (or the PostgreSQL `database`), opened on the first request (a turn that uses no control tool
 * creates no file). A workflow the turn starts runs at once in this process, on the same sidecar
 * and model.
 */
export function createTurnControlPlane(options: {
  dataDir: string;
  /** A PostgreSQL URL: that store instead of the SQLite one in `dataDir`. */
  database?: string;
  agentId: string;
  model: ResponsesModel;
  client: SidecarClient;
  turnOptions?: Pick<RunTurnOptions, 'toolSearch' | 'flattenNamespaces' | 'maxModelCalls'>;
  logger?: Logger;
  onEvent?: (event: WorkflowRunnerEvent) => void;
}): TurnControlPlane {
  let opened: Promise<{ store: ControlPlaneStore; runner: WorkflowRunner }> | undefined;
  const started: string[] = [];
  const open = () =>
    (opened ??= openControlPlaneStore({ dataDir: options.dataDir, ...(options.database ? { database: options.database } : {}) }).then((store) => {
      const runner = new WorkflowRunner({
        store,
        model: options.model,
        openTaskTurn: sidecarTaskTurns(options.client),
        ...(options.turnOptions ? { turnOptions: options.turnOptions } : {}),
        ...(options.logger ? { logger: options.logger } : {}),
        ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      });
      return { store, runner };
    }));
  return {
    async onClientRequest(request) {
      if (request.kind !== 'control') throw new Error('the CLI answers approvals through its approver');
      let context;
      try {
        context = await open();
      } catch (error) {
        return { kind: 'control', control: { reply: { $case: 'error', value: { code: 'unavailable', message: `the control-plane store cannot be opened: ${errorMessage(error)}` } } } };
      }
      const { store, runner } = context;
      const hook: WorkflowRunnerHook = {
        adopt: (runId) => {
          started.push(runId);
          runner.adopt(runId);
        },
        cancelled: (runId, reason) => runner.cancelled(runId, reason),
      };
      const reply = await answerControlRequest({ store, agentId: options.agentId, request: request.control, hooks: { workflowRunner: hook } });
      return { kind: 'control', control: reply };
    },
    async waitForStartedRuns(signal) {
      if (!opened || started.length === 0) return [];
      const { runner } = await opened;
      const runs: WorkflowRunRecord[] = [];
      for (const runId of started) {
        const run = await runner.waitForRun(runId, { signal });
        if (run) runs.push(run);
      }
      return runs;
    },
    async reportStartedRuns(signal, progress) {
      if (started.length === 0) return;
      progress(`▶ waiting for ${started.length} workflow run${started.length === 1 ? '' : 's'} this turn started (Ctrl-C leaves them to \`workflow resume\` or \`serve\`)`);
      try {
        for (const run of await this.waitForStartedRuns(signal)) {
          progress(`■ workflow "${run.name}" (${run.runId}): ${run.state}${run.error ? `: ${run.error}` : ''}`);
          for (const task of run.tasks) if (task.resultJson !== undefined) progress(`  ${task.taskId}: ${task.resultJson}`);
        }
      } catch {
        progress(`■ left running: ${started.join(', ')}; resume with \`npm run controller -- workflow resume RUN_ID\``);
      }
    },
    async close() {
      if (!opened) return;
      const context = await opened.catch(() => undefined);
      if (!context) return;
      await context.runner.close();
      await context.store.close();
    },
  };
}
