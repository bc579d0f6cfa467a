import path from 'node:path';
import type { CategoryConfig } from './category-config.js';
import { defaultLimitSettings, defaultSandboxSettings, effectivePolicy, type ProcessPolicy, type SandboxSettings, type TurnSandbox } from './computer/sandbox/index.js';

/**
 * The sidecar's sandbox settings: `config.sandbox`, or (an embedding program that set none) the
 * default `workspace-write` with the network off and the state folder hidden. The state folder's
 * `mcporter` folder (the wrapper and configuration skills tell the model to run) stays readable.
 */
export function sandboxSettingsOf(config: CategoryConfig): SandboxSettings {
  if (config.sandbox) return config.sandbox;
  return { ...defaultSandboxSettings(), hide: [config.stateDir], readable: [path.join(config.stateDir, 'mcporter')] };
}

/**
 * The policy a turn's processes run under: the operator's sandbox settings tightened by the turn,
 * and the limits (`config.processLimits`, the defaults when unset) of `agent`'s group. Processes of
 * no one agent (MCP servers, skills' listings) share the sidecar's group.
 */
export function policyFor(config: CategoryConfig, turn?: TurnSandbox, agent?: string): ProcessPolicy {
  return {
    ...effectivePolicy(sandboxSettingsOf(config), config.workspace, turn),
    limits: config.processLimits ?? defaultLimitSettings(),
    ...(agent !== undefined ? { agent } : {}),
  };
}
