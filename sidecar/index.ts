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
export { defaultSidecarLimits, type SidecarConfig, type SidecarLimits, type WebFetchProfile, type WebSearchProfile } from './config.js';
export type { SidecarTls } from './server.js';
// SANDBOX: the one function that starts a process for the model (bubblewrap in front when the
// sidecar's policy says so, the process-group reaper behind) comes from the sandbox branch
// (sidecar/categories/computer/sandbox/). Once it lands it is exported here for tool authors, so a
// user's tool that starts a process goes through the same sandbox as run_command.
