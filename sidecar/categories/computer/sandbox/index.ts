/**
 * The one way to start a process for the model (see docs/sandbox.md). Other modules import from
 * here: `startProcess` to spawn, `prepareCommand` for the exec of a PTY library, `policyFor` for a
 * turn's policy, `checkFileAccess` for the file tools.
 */
export { agentNetworkSupport, AgentNetworks, sharedAgentNetworks, type AgentNetworkLease, type AgentNetworkSupport } from './agent-network.js';
export { buildSandboxArgv, type CommandSpec, type ExecSpec, type JoinNetwork, type ProxyEndpoint } from './bwrap-argv.js';
export { checkFileAccess, hiddenPathTest } from './file-access.js';
export { hostAllowed, networkProxyFor, startNetworkProxy, type NetworkProxy } from './network-proxy.js';
export { defaultSandboxSettings, describeNetwork, effectivePolicy, parseNetworkPolicy, parseSandboxMode } from './sandbox-policy.js';
export type { NetworkPolicy, SandboxMode, SandboxPolicy, SandboxSettings, TurnSandbox } from './sandbox-policy.js';
export { BWRAP_ENV, runSandboxProbe, sandboxProbe, sandboxUnavailableError, type SandboxProbe } from './sandbox-probe.js';
export { policyFor, prepareCommand, sandboxSettingsOf, spawnPrepared, startProcess, type StartedProcess, type StartProcessOptions } from './start-process.js';
export { sharedProcessGroupReaper, type ProcessGroupReaper } from '../process-group-reaper.js';
