import { errorMessage } from '../../src/index.js';
import type { ControlPlaneStore } from '../control-plane/domain/control-plane-store.js';
import type { ConsoleApprovals } from './console-approvals.js';
import { checkSidecarHealth, type SidecarHealth } from './sidecar-health.js';
import type { FeedTurn, TurnFeed } from './turn-feed.js';

/** An agent the console shows, with where its sidecar is. */
export interface ConsoleAgent {
  agentId: string;
  /** The sidecar's `host:port`; health is not checked without one. */
  address?: string;
  token?: string;
}

/** What the console reads. Everything but the feed is optional. */
export interface ConsoleSources {
  /** The turns of this process, as their onEvent hooks recorded them. */
  feed: TurnFeed;
  agents: () => ConsoleAgent[];
  /** The control-plane store (the one ControlPlaneService reads): workflows, schedules, jobs, stored approvals. */
  store?: ControlPlaneStore;
  /** Calls of this process's turns waiting for the console's decision. */
  localApprovals?: ConsoleApprovals;
}

/** One approval as the page shows it (stored, or waiting in this process). */
export interface ConsoleApproval {
  approvalId: string;
  source: 'store' | 'process';
  agentId: string;
  turnId: string;
  callId: string;
  toolName: string;
  namespace: string;
  label: string;
  parametersJson: string;
  readOnly: boolean;
  destructive: boolean;
  status: string;
  createdAt: string;
  expiresAt?: string;
}

/** Everything the page renders, in one JSON document. */
export interface ConsoleState {
  agents: Array<{ agentId: string; address?: string; health: SidecarHealth }>;
  turns: FeedTurn[];
  todos: Record<string, unknown>;
  workflows: unknown[];
  schedules: unknown[];
  jobs: unknown[];
  approvals: ConsoleApproval[];
  /** Why a store-backed view is empty (the store failed to answer), if it did. */
  storeError?: string;
}

/**
 * Reads the console's state: sidecar health (bounded by `signal` and a 2 s deadline each), the
 * feed's turns and todos, and from the store the newest 20 workflow runs with their attempts, the
 * schedules, the newest 50 jobs and the pending approvals. A store failure empties those views and
 * is reported in `storeError`; it never throws.
 */
export async function readConsoleState(sources: ConsoleSources, signal: AbortSignal): Promise<ConsoleState> {
  const agentList = sources.agents();
  const [health, stored] = await Promise.all([
    Promise.all(agentList.map((agent) => (agent.address ? checkSidecarHealth({ address: agent.address, ...(agent.token ? { token: agent.token } : {}), signal }) : Promise.resolve<SidecarHealth>('unknown')))),
    readStore(sources.store),
  ]);
  const local: ConsoleApproval[] = (sources.localApprovals?.pending() ?? []).map((approval) => ({ ...approval, source: 'process', status: 'pending' }));
  return {
    agents: agentList.map((agent, index) => ({ agentId: agent.agentId, ...(agent.address ? { address: agent.address } : {}), health: health[index]! })),
    turns: sources.feed.turns(),
    todos: sources.feed.todos(),
    workflows: stored.workflows,
    schedules: stored.schedules,
    jobs: stored.jobs,
    approvals: [...local, ...stored.approvals],
    ...(stored.error ? { storeError: stored.error } : {}),
  };
}

async function readStore(store: ControlPlaneStore | undefined) {
  const empty = { workflows: [] as unknown[], schedules: [] as unknown[], jobs: [] as unknown[], approvals: [] as ConsoleApproval[], error: undefined as string | undefined };
  if (!store) return empty;
  try {
    const runs = await store.workflows.listRuns({ limit: 20 });
    const workflows = await Promise.all(
      runs.map(async (listed) => {
        // Lists leave committed results out: read each run whole, with its attempt log.
        const run = (await store.workflows.getRun(listed.runId)) ?? listed;
        return { ...run, attempts: await store.workflows.listAttempts(run.runId) };
      }),
    );
    const [schedules, jobs, approvals] = await Promise.all([store.schedules.list(undefined, 100), store.jobs.list(undefined, 50), store.approvals.list({ pendingOnly: true, limit: 100 })]);
    return {
      ...empty,
      workflows,
      schedules,
      jobs,
      approvals: approvals.map((record) => ({
        approvalId: record.approvalId,
        source: 'store' as const,
        agentId: record.agentId,
        turnId: record.turnId,
        callId: record.callId,
        toolName: record.toolName,
        namespace: record.namespace,
        label: record.label,
        parametersJson: record.parametersJson,
        readOnly: record.readOnly,
        destructive: record.destructive,
        status: record.status,
        createdAt: record.createdAt.toISOString(),
        expiresAt: record.expiresAt.toISOString(),
      })),
    };
  } catch (error) {
    return { ...empty, error: `the store did not answer: ${errorMessage(error)}` };
  }
}
