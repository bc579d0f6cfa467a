/**
 * What a process the sidecar starts for the model may do: the operator's settings (the sidecar's
 * `--sandbox`, `--network`, `--hide` flags) and, per turn, a tightening the client asks for.
 * Pure data and pure functions; bwrap-argv.ts turns a policy into the argv that enforces it.
 */

import { homedir } from 'node:os';
import path from 'node:path';

/** The file system a process sees: `off` runs it unconfined (the operator's explicit choice). */
export type SandboxMode = 'off' | 'read-only' | 'workspace-write';

/** The network a sandboxed process reaches: none, all, or the listed hosts through the sidecar's proxy. */
export type NetworkPolicy = { mode: 'off' } | { mode: 'on' } | { mode: 'allow'; hosts: string[] };

/** The operator's settings, as the sidecar's flags (or an embedding program) give them. */
export interface SandboxSettings {
  mode: SandboxMode;
  /** `off` by default under a sandbox; always `on` under `mode: 'off'` (nothing could enforce it). */
  network: NetworkPolicy;
  /**
   * Absolute paths hidden from every process started for the model and from the file tools: the
   * `--hide` flags plus the sidecar's own secrets and state (token file, TLS key, state folder).
   */
  hide: string[];
  /**
   * Absolute paths under a hidden one that stay readable (read-only): the mcporter wrapper and
   * configuration the skills category writes in the state folder for commands to run.
   */
  readable: string[];
  /**
   * Lets run_command ask to run one command outside the sandbox (`unsandboxed: true`); every such
   * call asks the client's approval first, whatever the turn's approval policy. Off by default.
   */
  allowUnsandboxed: boolean;
}

/** A turn's tightening (TurnContext.sandbox): it can only make the policy stricter. */
export interface TurnSandbox {
  mode?: Exclude<SandboxMode, 'off'>;
  networkOff?: boolean;
}

/**
 * Where every sidecar and controller of this user keeps its state by default
 * (`~/.local/state/tools-runtime/<workspace hash>/`, `.../controller/`): the whole of it is hidden
 * from every sandboxed process, not only this sidecar's own folder, so one agent's commands never
 * read another's state (its session screens, todo list, mcporter configuration, the controller's
 * store and tokens).
 */
export function sharedStateRoot(home: string = homedir()): string {
  return path.join(home, '.local', 'state', 'tools-runtime');
}

/** The policy one process runs under. */
export interface SandboxPolicy {
  mode: SandboxMode;
  network: NetworkPolicy;
  /** The agent's workspace (absolute): writable under `workspace-write`, except its git metadata. */
  workspace: string;
  hide: string[];
  readable: string[];
}

const strictness: Record<SandboxMode, number> = { off: 0, 'workspace-write': 1, 'read-only': 2 };

/** The default settings: `workspace-write`, network off, nothing extra hidden. */
export function defaultSandboxSettings(): SandboxSettings {
  return { mode: 'workspace-write', network: { mode: 'off' }, hide: [], readable: [], allowUnsandboxed: false };
}

/**
 * The policy a turn's processes run under: the operator's settings, made stricter (never looser)
 * by the turn's request. A turn that asks for a sandbox under `--sandbox off` gets one (and needs
 * bubblewrap for it).
 */
export function effectivePolicy(settings: SandboxSettings, workspace: string, turn?: TurnSandbox): SandboxPolicy {
  let mode = settings.mode;
  if (turn?.mode && strictness[turn.mode] > strictness[mode]) mode = turn.mode;
  let network: NetworkPolicy = settings.mode === 'off' ? { mode: 'on' } : settings.network;
  if (turn?.networkOff) network = { mode: 'off' };
  // A sandbox the turn asked for under --sandbox off keeps the network the operator left open,
  // unless the turn closed it too.
  const hide = [...new Set([...settings.hide, sharedStateRoot()])];
  return { mode, network, workspace, hide, readable: settings.readable };
}

/**
 * Parses `--network off|on|allow:HOST,...` (hosts are names, `*.`-globs, or IP addresses).
 *
 * @throws Error with a message naming the bad part.
 */
export function parseNetworkPolicy(text: string): NetworkPolicy {
  if (text === 'off' || text === 'on') return { mode: text };
  if (!text.startsWith('allow:')) throw new Error(`expected off, on or allow:HOST,..., got ${JSON.stringify(text)}`);
  const hosts = text
    .slice('allow:'.length)
    .split(',')
    .map((host) => host.trim().toLowerCase())
    .filter((host) => host !== '');
  if (hosts.length === 0) throw new Error('allow: needs at least one host (allow:example.com,*.npmjs.org)');
  for (const host of hosts) {
    // `[v6]` and `[v6]:port` (ports are checked by the proxy's parseAllowEntry).
    const bare = host.replace(/^\[([^\]]*)\](:\d+)?$/, '$1$2');
    if (!/^(\*\.)?[a-z0-9_.:-]+$/.test(bare) || bare.includes('..')) throw new Error(`not a host name, *.glob or address: ${JSON.stringify(host)}`);
  }
  return { mode: 'allow', hosts };
}

/** `--sandbox`'s value, checked. @throws Error for anything else. */
export function parseSandboxMode(text: string): SandboxMode {
  if (text === 'off' || text === 'read-only' || text === 'workspace-write') return text;
  throw new Error(`expected off, read-only or workspace-write, got ${JSON.stringify(text)}`);
}

/** The network policy as the flag spells it (for logs and errors). */
export function describeNetwork(network: NetworkPolicy): string {
  return network.mode === 'allow' ? `allow:${network.hosts.join(',')}` : network.mode;
}
