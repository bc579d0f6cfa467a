import type { SidecarLimits } from '../sidecar-limits.js';
import type { LimitSettings } from './computer/sandbox/limits/limit-settings.js';
import type { SandboxSettings } from './computer/sandbox/sandbox-policy.js';

/**
 * What every category may read of the sidecar's configuration: the workspace and state folders,
 * the commands' environment, the bounds and the sandbox. A category's own part (web profiles, the
 * Brain's folder, skills, MCP servers) is handed to it where the catalogs are composed
 * (tool-sets.ts), so no category sees another's types: the composed `SidecarConfig`
 * (sidecar-config.ts) is the start-up's alone.
 */
export interface CategoryConfig {
  /** Absolute path of the agent's workspace: every file path and command runs inside it. */
  workspace: string;
  /** Absolute path of a folder for the sidecar's own state (todo lists, indexes, mcporter config). */
  stateDir: string;
  /** Variables added to the environment of commands, over the allow-listed ones of the sidecar's own. */
  commandEnv: Record<string, string>;
  /** Names of the sidecar's own environment variables that commands inherit. */
  commandEnvAllowList: string[];
  limits: SidecarLimits;
  /**
   * The sandbox every process started for the model runs in, and the file tools obey (`--sandbox`,
   * `--network`, `--hide`). Unset: `workspace-write`, network off, the state folder hidden. Shared:
   * every category that starts a process (computer, skills, MCP servers) starts it through the sandbox.
   */
  sandbox?: SandboxSettings;
  /**
   * What one agent's processes may use together (`--limits`): memory with the tmpfs it writes,
   * processes, CPU, the sandbox's `/tmp` size. Unset: the defaults (defaultLimitSettings).
   */
  processLimits?: LimitSettings;
}
