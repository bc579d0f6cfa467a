import { ToolRuntimeError } from '../../src/errors.js';
import type { WorkerAgentTool } from '../../src/tool/worker-agent-tool.js';
import { toolKey } from '../../src/tool/tool-key.js';
import type { CategoryConfig } from './category-config.js';
import type { TurnSandbox } from './computer/sandbox/sandbox-policy.js';
import type { ControlChannel } from '../turn/client-requests.js';

export type { ControlChannel } from '../turn/client-requests.js';

/** Which calls of a turn need the client's approval before they run. */
export interface ApprovalPolicy {
  /**
   * `none`: no call asks; `destructive`: calls of destructive tools; `not_read_only`: every call of
   * a tool that is not read-only; `listed`: calls of the tools in `toolNames`.
   */
  mode: 'none' | 'destructive' | 'not_read_only' | 'listed';
  /** For `listed`: tool names, `namespace.name` for a namespaced tool. */
  toolNames: string[];
}

/** Which catalog a turn is assembled from. */
export type TurnKind = 'text' | 'workflow_task';

/** The turn's context as the sidecar sees it (decoded from the proto's TurnContext). */
export interface TurnContext {
  agentId: string;
  turnId: string;
  kind: TurnKind;
  enabledSkills: string[];
  canSpawnJobs: boolean;
  brainEnabled: boolean;
  /** The workflow task's result schema (JSON Schema text); empty for text turns. */
  resultSchemaJson: string;
  labels: Record<string, string>;
  /** The client answers control requests: the schedule, job and workflow tools are offered. */
  controlPlane?: boolean;
  /** Which calls need approval; absent means none. */
  approvalPolicy?: ApprovalPolicy;
  /** The turn's tightening of the sidecar's sandbox (never a loosening); absent means none. */
  sandbox?: TurnSandbox;
}

/** What a category creator is given for one turn. */
export interface CategoryContext {
  turn: TurnContext;
  config: CategoryConfig;
  /** Aborted when the turn ends; for work a creator starts while assembling. */
  signal: AbortSignal;
  /**
   * The turn's control channel to the control plane: present only when the client declared
   * `control_plane`. A creator whose tools need it returns `[]` without it.
   */
  control?: ControlChannel;
}

/** A creator's tools, and instructions to project into the prompt (skills' knowledge). */
export interface CategoryOutput {
  tools: WorkerAgentTool[];
  instructions?: string;
}

/**
 * A category creator: builds one category's tools for a turn, `[]` where the category is
 * unavailable. Sidecar-lifetime state (stores, indexes, caches) lives in the closure that makes it.
 */
export type CategoryCreator = ((
  context: CategoryContext,
) => WorkerAgentTool[] | CategoryOutput | Promise<WorkerAgentTool[] | CategoryOutput>) & {
  /**
   * Set on the creators of users' own categories (`--tools`, `startSidecar({ categories })`): a
   * throw, or a tool whose name an earlier category already took, costs this category only (it
   * offers nothing this turn and `onFailure` is told why); the built-in categories' errors fail
   * the assembly as before.
   */
  isolated?: { onFailure(error: unknown): void };
};

/** The two ordered catalogs of the seed. */
export interface Catalogs {
  text: CategoryCreator[];
  workflowTask: CategoryCreator[];
}

/** One turn's assembled tools and instructions. */
export interface AssembledToolSet {
  tools: WorkerAgentTool[];
  instructions: string;
}

/**
 * Runs the catalog for the turn's kind, in order, and concatenates what the creators return.
 * Throws what a creator throws, except an `isolated` creator's: its category is left out.
 */
export async function assembleToolSet(catalogs: Catalogs, context: CategoryContext): Promise<AssembledToolSet> {
  const creators = context.turn.kind === 'workflow_task' ? catalogs.workflowTask : catalogs.text;
  const tools: WorkerAgentTool[] = [];
  const instructions: string[] = [];
  for (const create of creators) {
    let output: WorkerAgentTool[] | CategoryOutput;
    if (create.isolated) {
      try {
        output = await create(context);
        const offered: unknown = Array.isArray(output) ? output : output?.tools;
        if (!Array.isArray(offered) || offered.some((tool) => typeof tool?.name !== 'string' || typeof tool.execute !== 'function')) {
          throw new ToolRuntimeError('invalid_definition', 'its creator returned something other than tools or { tools, instructions } (make tools with defineWorkerTool)');
        }
        const taken = new Set(tools.map((tool) => toolKey(tool.name, tool.namespace)));
        for (const tool of Array.isArray(output) ? output : output.tools) {
          const key = toolKey(tool.name, tool.namespace);
          if (taken.has(key)) throw new ToolRuntimeError('duplicate_tool', `its tool ${JSON.stringify(key)} has the name of a tool an earlier category offers`);
          taken.add(key);
        }
      } catch (error) {
        // The turn's own end is no failure of the category: let the abort end the assembly.
        if (context.signal.aborted) throw error;
        create.isolated.onFailure(error);
        continue;
      }
    } else {
      output = await create(context);
    }
    if (Array.isArray(output)) {
      tools.push(...output);
    } else {
      tools.push(...output.tools);
      if (output.instructions) instructions.push(output.instructions);
    }
  }
  return { tools, instructions: instructions.join('\n\n') };
}
