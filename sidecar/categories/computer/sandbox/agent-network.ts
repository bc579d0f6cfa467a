import type { ChildProcess } from 'node:child_process';
import { accessSync, closeSync, constants, fstatSync, openSync, statSync } from 'node:fs';
import path from 'node:path';
import { sharedProcessGroupReaper, type ProcessGroupReaper } from './process-group-reaper.js';
import { SANDBOX_PROXY_PORT, SANDBOX_PROXY_SOCKET, type JoinNetwork } from './bwrap-argv.js';
import { networkProxyFor } from './network-proxy.js';
import { describeNetwork, type SandboxPolicy } from './sandbox-policy.js';
import { ToolRuntimeError } from '../../../../src/errors.js';
import { sandboxProbe, sandboxUnavailableError } from './sandbox-probe.js';
import { spawnPrepared } from './start-process.js';

/** A hold on an agent's network: its commands join it while the lease is held. */
export interface AgentNetworkLease {
  /** What bwrap-argv needs to start a command inside the namespace. */
  join: JoinNetwork;
  /** Gives the hold back; the last one tears the namespace down. Idempotent. */
  release(): void;
}

interface Holder {
  child: ChildProcess;
  /** The holder's outer bwrap: its process group. */
  group: number;
  /** `/proc/<sidecar>/fd/<n>`: the sidecar's own descriptor on the namespace (see pinNamespace). */
  netns: string;
  fd: number | undefined;
  refs: number;
  closed: boolean;
}

/** How long a holder may take to come up (bwrap, and socat listening under allow:). */
const READY_TIMEOUT_MS = 10_000;

/** Whether agents share a namespace here, and why not when they cannot. */
export type AgentNetworkSupport = { shared: true; nsenter: string } | { shared: false; reason: string };

let support: AgentNetworkSupport | undefined;

/**
 * Whether this sidecar can give each agent one network namespace. Joining one takes setns(2) with
 * CAP_SYS_ADMIN over it, done by util-linux's `nsenter --net` before bwrap starts (bubblewrap 0.8
 * has no option to join a network namespace): the sidecar must run as root. Elsewhere each
 * command keeps a network namespace of its own (sessions cannot reach each other under
 * `--network off`), which docs/sessions.md says.
 */
export function agentNetworkSupport(): AgentNetworkSupport {
  if (support) return support;
  if (process.getuid?.() !== 0) return (support = { shared: false, reason: 'the sidecar is not root, and joining a network namespace needs CAP_SYS_ADMIN over it' });
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':').filter(Boolean)) {
    const candidate = path.join(dir, 'nsenter');
    try {
      accessSync(candidate, constants.X_OK);
      return (support = { shared: true, nsenter: candidate });
    } catch {
      // next
    }
  }
  return (support = { shared: false, reason: 'nsenter (util-linux) is not installed' });
}

/**
 * The sidecar's per-agent network namespaces. Each is held open by a holder process: a bubblewrap
 * sandbox with a network namespace of its own (bwrap brings its loopback up) running `sleep`, or
 * under `allow:` the socat that bridges 127.0.0.1:3128 to the sidecar's proxy, once for the agent
 * rather than once per command (two would clash on the port). Commands join it through
 * `nsenter --net=/proc/<sidecar>/fd/<n> bwrap ...` (see pinNamespace) without `--unshare-net`, so an agent's commands
 * and sessions share one loopback and nothing else: not the host's, not another agent's.
 *
 * Lifetime: counted leases. A session takes one for its life; run_command takes one only when the
 * agent's namespace exists already (nothing of the agent runs otherwise, so a command alone keeps
 * the cheaper namespace of its own). The last release SIGKILLs the holder's group; the namespace
 * then goes with the last process in it. The holder dies with the sidecar too: bwrap's
 * `--die-with-parent`, and the process-group reaper for a sidecar that was SIGKILLed.
 * A turn's namespace is keyed by agent and network policy: a turn that closed the network does not
 * share the loopback of the agent's `allow:` turns.
 */
export class AgentNetworks {
  private readonly holders = new Map<string, Promise<Holder>>();

  constructor(private readonly reaper: () => ProcessGroupReaper = sharedProcessGroupReaper) {}

  /**
   * A lease on `agentId`'s namespace for commands under `policy`, or undefined when commands keep
   * their own: the policy is unsandboxed or leaves the network on, the machine cannot share one
   * (agentNetworkSupport), or `create` is false and the agent has none now.
   *
   * @throws ToolRuntimeError `sandbox_unavailable` when the sandbox or the proxy cannot be had, or
   *   the holder does not come up (the message says why and the fix): nothing may run then.
   */
  async acquire(agentId: string, policy: SandboxPolicy, options: { create: boolean }): Promise<AgentNetworkLease | undefined> {
    if (policy.mode === 'off' || policy.network.mode === 'on') return undefined;
    const supported = agentNetworkSupport();
    if (!supported.shared) return undefined;
    const key = `${agentId}\u0000${describeNetwork(policy.network)}`;
    let pending = this.holders.get(key);
    if (!pending) {
      if (!options.create) return undefined;
      pending = this.startHolder(policy);
      this.holders.set(key, pending);
      pending.catch(() => this.holders.delete(key));
    }
    const holder = await pending;
    if (holder.closed) {
      // It died between two commands (killed from outside): start a fresh one.
      if (this.holders.get(key) === pending) this.holders.delete(key);
      return this.acquire(agentId, policy, options);
    }
    holder.refs += 1;
    let released = false;
    return {
      join: { nsenter: supported.nsenter, netns: holder.netns },
      release: () => {
        if (released) return;
        released = true;
        holder.refs -= 1;
        if (holder.refs > 0 || holder.closed) return;
        this.stop(holder);
        if (this.holders.get(key) === pending) this.holders.delete(key);
      },
    };
  }

  /** Agents with a namespace now (for tests and listings). */
  get size(): number {
    return this.holders.size;
  }

  private stop(holder: Holder): void {
    if (holder.fd !== undefined) closeSync(holder.fd);
    holder.fd = undefined;
    if (holder.closed) return;
    holder.closed = true;
    try {
      process.kill(-holder.group, 'SIGKILL');
    } catch {
      // gone already
    }
  }

  private async startHolder(policy: SandboxPolicy): Promise<Holder> {
    const probe = await sandboxProbe();
    if (!probe.ok) throw sandboxUnavailableError(probe);
    const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'];
    let script = 'echo ready; exec sleep infinity';
    if (policy.network.mode === 'allow') {
      const proxy = await networkProxyFor(policy.network.hosts);
      args.push('--ro-bind', proxy.socketPath, SANDBOX_PROXY_SOCKET);
      script = [
        `'${proxy.socat}' TCP-LISTEN:${SANDBOX_PROXY_PORT},bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:${SANDBOX_PROXY_SOCKET} 2>/dev/null &`,
        'i=0',
        `while ! (exec 3<>/dev/tcp/127.0.0.1/${SANDBOX_PROXY_PORT}) 2>/dev/null && [ $i -lt 200 ]; do sleep 0.01; i=$((i+1)); done`,
        'echo ready',
        'wait',
      ].join('\n');
    }
    // The holder runs nothing of the model's; it is confined like a command all the same.
    args.push('--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--cap-drop', 'ALL', '--new-session', '--die-with-parent', '--info-fd', '3', '--', '/bin/bash', '-c', script, 'tools-runtime-agent-network');
    // Through the one spawn of a prepared command (its own process group), as every sandbox is.
    const child = spawnPrepared({ file: probe.bwrap, args, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, cwd: '/' }, ['ignore', 'pipe', 'ignore', 'pipe']);
    const group = child.pid;
    if (group === undefined) throw new ToolRuntimeError('sandbox_unavailable', `nothing was run: the agent's network namespace could not be made (${probe.bwrap} did not start)`);
    const reaper = this.reaper();
    reaper.track(group);
    const holder: Holder = { child, group, netns: '', fd: undefined, refs: 0, closed: false };
    child.once('exit', () => {
      // Killed from outside, or stopped: no command joins it any more (the next gets a new one).
      this.stop(holder);
      reaper.release(group);
    });
    try {
      holder.fd = pinNamespace(await holderReady(child));
      holder.netns = `/proc/${process.pid}/fd/${holder.fd}`;
    } catch (error) {
      this.stop(holder);
      throw error;
    }
    // The pipes stay open for the holder's life; they must not keep the sidecar's loop alive.
    child.unref();
    for (const stream of [child.stdout, child.stdio[3]]) (stream as { unref?: () => void } | null)?.unref?.();
    return holder;
  }
}

/**
 * Opens the holder's namespace and returns the descriptor. Commands join through the sidecar's own
 * descriptor (`/proc/<sidecar>/fd/<n>`), never through the holder's pid: a pid is reused once its
 * process is gone, and a command started in that moment would join whatever namespace the new
 * process has (the host's, say). The descriptor names the namespace itself, for as long as it is
 * open (closed when the holder stops; Node opens it close-on-exec, so no command inherits it).
 *
 * @throws ToolRuntimeError `sandbox_unavailable` when it is the sidecar's own namespace (nothing
 *   may run in the host's network by accident).
 */
function pinNamespace(path: string): number {
  const fd = openSync(path, 'r');
  if (fstatSync(fd).ino === statSync('/proc/self/ns/net').ino) {
    closeSync(fd);
    throw new ToolRuntimeError('sandbox_unavailable', `nothing was run: the agent's network holder is in the sidecar's own network namespace (${path}), not a new one`);
  }
  return fd;
}

/** Resolves with the holder's namespace path once bwrap reported its child and the script said ready. */
function holderReady(child: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let info = '';
    let out = '';
    let childPid: number | undefined;
    let ready = false;
    const timer = setTimeout(() => fail(`it was not ready within ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS);
    const done = () => {
      if (childPid === undefined || !ready) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve(`/proc/${childPid}/ns/net`);
    };
    const fail = (why: string) => {
      clearTimeout(timer);
      child.off('exit', onExit);
      reject(new ToolRuntimeError('sandbox_unavailable', `nothing was run: the agent's network namespace could not be made (its holder, a bwrap sandbox, failed: ${why}). Fix: check that bwrap runs here (the sidecar's start-up line), or start the sidecar with --network on.`));
    };
    const onExit = (code: number | null, signal: string | null) => fail(`it exited (${code ?? signal}) before it was ready`);
    child.once('exit', onExit);
    child.stdio[3]!.on('data', (chunk: Buffer) => {
      info += chunk.toString();
      const pid = /"child-pid":\s*(\d+)/.exec(info)?.[1];
      if (pid && childPid === undefined) {
        childPid = Number(pid);
        done();
      }
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (!ready && out.includes('ready')) {
        ready = true;
        done();
      }
    });
  });
}

let shared: AgentNetworks | undefined;

/** The process's per-agent namespaces (the sidecar has one). */
export function sharedAgentNetworks(): AgentNetworks {
  shared ??= new AgentNetworks();
  return shared;
}
