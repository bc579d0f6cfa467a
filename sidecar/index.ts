// The package's `tools-runtime/sidecar` entry: hosting your own tools in a sidecar (named exports
// only). The CLI is `tools-runtime-sidecar` (sidecar/main.ts); this is the same server embedded.
export { startSidecar, type StartSidecarOptions, type StartedSidecar } from './start-sidecar.js';
export { defineToolCategory, type ToolCategory } from './tool-modules.js';
export type {
  ApprovalPolicy,
  CategoryContext,
  CategoryCreator,
  CategoryOutput,
  ControlChannel,
  TurnContext,
  TurnKind,
} from './categories/category.js';
export type { SidecarConfig } from './sidecar-config.js';
export type { CategoryConfig } from './categories/category-config.js';
export { defaultSidecarLimits, type SidecarLimits } from './sidecar-limits.js';
export type { WebFetchProfile, WebSearchProfile } from './categories/web/web-profiles.js';
export type { SidecarTls } from './server.js';
// Starting a process from your own tool: the one function the built-in tools use, so it runs under
// the sidecar's sandbox (bubblewrap in front, hidden secrets, the network policy) and its process
// group dies with the call's kill and with the sidecar. The policy for a turn:
// `policyFor(context.config, context.turn.sandbox, context.turn.agentId)` (the agent's limits group).
export { policyFor } from './categories/process-policy.js';
export {
  prepareCommand,
  startProcess,
  type CommandSpec,
  type ExecSpec,
  type LimitSettings,
  type ProcessPolicy,
  type SandboxPolicy,
  type SandboxSettings,
  type StartedProcess,
  type StartProcessOptions,
  type TurnSandbox,
} from './categories/computer/sandbox/index.js';
