/**
 * The one way to start a process for the model (see docs/sandbox.md): a module that knows no tool
 * and no category (rule `sandbox-knows-no-tool` in .dependency-cruiser.cjs). Other modules import
 * from here: `startProcess` to spawn, `prepareCommand` and `adoptProcess` for a PTY library's exec,
 * `checkFileAccess` for the file tools, the limits for the start-up line.
 */
export { buildSandboxArgv, type CommandSpec, type ExecSpec, type ProxyEndpoint } from './bwrap-argv.js';
export { checkFileAccess, gitMetadataReason, hiddenPathTest, resolveHiddenPaths, type HiddenEntry, type HiddenPathTest } from './file-access.js';
export { findGitMetadata, type GitMetadata } from './git-metadata.js';
export { hostAllowed, networkProxyFor, startNetworkProxy, type NetworkProxy } from './network-proxy.js';
export { defaultSandboxSettings, describeNetwork, effectivePolicy, parseNetworkPolicy, parseSandboxMode, sharedStateRoot } from './sandbox-policy.js';
export type { NetworkPolicy, SandboxMode, SandboxPolicy, SandboxSettings, TurnSandbox } from './sandbox-policy.js';
export { BWRAP_ENV, runSandboxProbe, sandboxProbe, sandboxUnavailableError, type SandboxProbe } from './sandbox-probe.js';
export {
  adoptProcess,
  prepareCommand,
  startPrepared,
  startProcess,
  type PreparedCommand,
  type ProcessHandle,
  type ProcessPolicy,
  type StartedProcess,
  type StartProcessOptions,
} from './start-process.js';
export { sharedProcessGroupReaper, startProcessGroupReaper, type ProcessGroupReaper } from './process-group-reaper.js';
export { defaultLimitSettings, describeLimitSettings, formatBytes, parseLimitSettings, type LimitSettings } from './limits/limit-settings.js';
export { processLimiterFor, type LimitMechanism, type ProcessLimiter } from './limits/process-limiter.js';
