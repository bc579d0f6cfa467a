import type { SidecarConfig } from './sidecar-config.js';
import { describeNetwork } from './categories/computer/sandbox/sandbox-policy.js';
import { agentNetworkSupport } from './categories/computer/sandbox/agent-network.js';
import { sandboxProbe, type SandboxProbe } from './categories/computer/sandbox/sandbox-probe.js';
import { defaultLimitSettings } from './categories/computer/sandbox/limits/limit-settings.js';
import { processLimiterFor, type LimitMechanism } from './categories/computer/sandbox/limits/process-limiter.js';
import { sandboxSettingsOf } from './categories/process-policy.js';

/**
 * The sidecar's sandbox as start-up reports it: a `{"event":"sandbox",...}` line on stdout (the
 * controller shows it, `npm start` included), one log line, and the health service's
 * `toolruntime.v1.Sandbox` status.
 */
export interface SandboxReport {
  event: 'sandbox';
  mode: 'off' | 'read-only' | 'workspace-write';
  network: string;
  /** False when the sandbox is asked for and cannot be had: process tools refuse every call. */
  ok: boolean;
  cause?: string;
  fix?: string;
  /** While unavailable: when the sidecar probes again (backoff 1 s, 2 s ... 60 s; a command asking after that probes at once). */
  retryInS?: number;
  /** Under `--sandbox off`: what is no longer covered. */
  warning?: string;
  /** How each agent's processes are bounded (`--limits`): the mechanism in force on this machine. */
  limitsMechanism: LimitMechanism;
  /** The limits, where they are enforced, and why a stronger mechanism was not used. */
  limits: string;
  /**
   * With the network off or `allow:`: whether an agent's commands and sessions share one network
   * namespace (docs/sessions.md, "One network per agent"), or each keeps its own, and why.
   */
  agentNetwork?: string;
}

/** What `--sandbox off` gives up, said at start-up and in docs/sandbox.md. */
export const SANDBOX_OFF_WARNING =
  'commands run unconfined with the sidecar\'s own rights: they can read its token, TLS key and state folder (the file tools still hide them), write wherever it can, reach every network and loopback service, and signal it; a process that leaves its process group (setsid, a double fork) can outlive its call and the sidecar (the next start kills such leftovers)';

/** Probes the sandbox (once per process) and says what the sidecar's commands will run under. Never rejects. */
export async function sandboxReport(config: SidecarConfig): Promise<SandboxReport> {
  const settings = sandboxSettingsOf(config);
  const network = describeNetwork(settings.network);
  const limiter = await processLimiterFor(config.processLimits ?? defaultLimitSettings());
  const limits = { limitsMechanism: limiter.mechanism, limits: limiter.description };
  if (settings.mode === 'off') return { event: 'sandbox', mode: 'off', network, ok: true, warning: SANDBOX_OFF_WARNING, ...limits };
  const probe = await sandboxProbe();
  const report = { ...describeProbe(probe, settings.mode, network), ...limits };
  if (!probe.ok || settings.network.mode === 'on') return report;
  const sharing = agentNetworkSupport();
  const agentNetwork = sharing.shared ? 'one per agent, shared by its commands and sessions' : `one per command (a session's server is not reachable from the agent's other commands): ${sharing.reason}`;
  return { ...report, agentNetwork };
}

/** The report for one probe's answer under `mode` (not off), without the limits' fields. */
export function describeProbe(probe: SandboxProbe, mode: 'read-only' | 'workspace-write', network: string): Omit<SandboxReport, 'limitsMechanism' | 'limits'> {
  if (probe.ok) return { event: 'sandbox', mode, network, ok: true };
  return { event: 'sandbox', mode, network, ok: false, cause: probe.cause, fix: probe.fix, ...(probe.retryInMs !== undefined ? { retryInS: Math.ceil(probe.retryInMs / 1_000) } : {}) };
}
