import type { ControlPlaneStore } from '../store/control-plane-store.js';
import { deadLocalOwners } from '../workflows/runner-owner.js';
import type { WorkflowRunner } from '../workflows/workflow-runner.js';

/**
 * Takes over the running workflow runs of `agentIds` that no live runner holds (no owner, a lease
 * that ran out, an owner process on this host that is gone) and has `runner` drive them; returns
 * the run ids taken. Unlike `WorkflowRunner.resume()`, it leaves other agents' runs alone: a
 * `serve` process only runs work for the agents it has a sidecar for (a run started from
 * `npm start` for an agent it does not know waits for a controller that knows it).
 */
export async function resumeAgentWorkflows(store: ControlPlaneStore, runner: WorkflowRunner, agentIds: ReadonlySet<string>): Promise<string[]> {
  const running = (await store.workflows.listRuns({ state: 'running', limit: 10_000 })).filter(
    (run) => agentIds.has(run.agentId) && run.owner !== runner.owner,
  );
  if (running.length === 0) return [];
  const takeOverFrom = deadLocalOwners(running.flatMap((run) => (run.owner ? [run.owner] : [])));
  const taken: string[] = [];
  for (const run of running) {
    const claimed = await store.workflows.claimRuns({ owner: runner.owner, leaseMs: runner.leaseMs, runId: run.runId, takeOverFrom });
    for (const runId of claimed) {
      runner.adopt(runId);
      taken.push(runId);
    }
  }
  return taken;
}
