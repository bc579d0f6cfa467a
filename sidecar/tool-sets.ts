import path from 'node:path';
import { createJsonLogger, type Logger } from '../src/index.js';
import { createBackgroundJobTools } from './categories/background-jobs.js';
import { createBrainTools } from './categories/brain.js';
import { BrainIndex } from './categories/brain/brain-index.js';
import type { Catalogs } from './categories/category.js';
import { createComputerTools } from './categories/computer.js';
import { createMcpServersState, createMcpServerTools } from './categories/mcp-servers.js';
import { SessionTable } from './categories/computer/sessions/session-table.js';
import { createScheduleTools } from './categories/schedule.js';
import { createSkillsProjection, createSkillsState } from './categories/skills.js';
import { createSubmitResultTools } from './categories/submit-result.js';
import { createTodoStore, createTodoTools } from './categories/todo.js';
import { createWebTools } from './categories/web.js';
import { createWorkflowTools } from './categories/workflow.js';
import type { SidecarConfig } from './sidecar-config.js';

/** The catalogs, plus `close()` for the sidecar-lifetime state they hold (the Brain index and its worker, the command sessions). */
export interface SidecarCatalogs extends Catalogs {
  close(): Promise<void>;
}

/**
 * The sidecar's two ordered catalogs, as in the seed: explicit and ordered, no discovery. If a
 * tool's creator is in the list (and returns it for the turn), the tool is available; if not, not.
 * Sidecar-lifetime state (the todo store, the Brain index, the skill files and MCP tool listings)
 * is made here once and shared by turns; `close()` releases it.
 */
export function createCatalogs(config: SidecarConfig, options: { logger?: Logger } = {}): SidecarCatalogs {
  const logger = options.logger ?? createJsonLogger({ fields: { component: 'categories' } });
  const todoStore = createTodoStore({ dir: config.stateDir });
  const skills = createSkillsState(config, { logger });
  // With --brain the index is built (or reused) in the background from start-up, in its own worker
  // thread; without it, nothing of Brain (the SQLite binding included) is loaded.
  let brainIndex: BrainIndex | undefined = config.brainDir
    ? BrainIndex.start({
        brainDir: config.brainDir,
        databasePath: path.join(config.stateDir, 'brain', 'index.sqlite'),
        limits: config.brainLimits,
        logger,
      })
    : undefined;
  const getBrainIndex = () => brainIndex;
  // Command sessions belong to the agent, not the turn: one table for the sidecar's life.
  const sessions = new SessionTable({ limits: { maxBufferedChars: config.limits.maxResultTextChars } });
  // Mounted MCP servers start with the catalogs (after the sidecar listens) and live as long.
  const mcpServers = createMcpServersState(config, { logger });
  // Each category gets its own part of the configuration here; a creator's context carries the common part only.
  const webProfiles = { ...(config.webFetch ? { webFetch: config.webFetch } : {}), ...(config.webSearch ? { webSearch: config.webSearch } : {}) };
  mcpServers.start();
  return {
    text: [
      (context) => createTodoTools(context, todoStore),
      (context) => createComputerTools(context, { sessions }),
      () => createWebTools(webProfiles),
      // The control plane's tools reach the controller over the turn's own stream: present only
      // when the client declared control_plane (background jobs also need can_spawn_jobs).
      (context) => createScheduleTools(context),
      (context) => createBackgroundJobTools(context),
      (context) => createWorkflowTools(context),
      (context) => createSkillsProjection(context, skills),
      (context) => createMcpServerTools(context, mcpServers),
    ],
    workflowTask: [
      () => createWebTools(webProfiles),
      (context) => createBrainTools(context, getBrainIndex),
      (context) => createSubmitResultTools(context, { logger }),
    ],
    async close() {
      await sessions.close();
      const index = brainIndex;
      brainIndex = undefined;
      await Promise.all([index?.close(), mcpServers.close()]);
    },
  };
}
