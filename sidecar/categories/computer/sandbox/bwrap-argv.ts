import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import type { SandboxPolicy } from './sandbox-policy.js';

/** A process to start, before any sandbox: the program and its arguments, where, with what environment. */
export interface CommandSpec {
  /** The program and its arguments, e.g. `['/bin/sh', '-c', command]`. */
  argv: readonly [string, ...string[]];
  /** Absolute working directory (must exist). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /**
   * True when the process gets a PTY of its own as its terminal (command sessions): bwrap's
   * `--new-session` is left out so the shell keeps that terminal as its controlling one (job
   * control works). TIOCSTI can then only push input into the session's own PTY, never into the
   * sidecar's terminal, which is what `--new-session` guards against.
   */
  terminal?: boolean;
  /**
   * Start the sandbox inside this network namespace (the agent's, see agent-network.ts) instead of
   * a new one of its own. Ignored unless sandboxed with the network off or `allow:`.
   */
  joinNetwork?: JoinNetwork;
}

/**
 * An existing network namespace to run a sandbox in: bwrap is exec'd by `nsenter --net=<netns>`,
 * without `--unshare-net` (bubblewrap 0.8 cannot join one itself). Under `allow:` the namespace's
 * holder runs the proxy bridge on 127.0.0.1:3128, so the command gets only the proxy variables.
 */
export interface JoinNetwork {
  /** util-linux nsenter. */
  nsenter: string;
  /** `/proc/<pid>/ns/net` of the process holding the namespace. */
  netns: string;
}

/** What to exec: `file` with `args` (bwrap in front when sandboxed), `env` and `cwd`. */
export interface ExecSpec {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** Where the sidecar's network proxy is, for `network: allow` (see network-proxy.ts). */
export interface ProxyEndpoint {
  /** The Unix socket the proxy listens on (outside the sandbox). */
  socketPath: string;
  /** The socat executable that bridges 127.0.0.1:port inside the sandbox to the socket. */
  socat: string;
}

/** The loopback port the proxy answers on inside the sandbox (its own network namespace). */
export const SANDBOX_PROXY_PORT = 3128;
/** Where the proxy's socket is mounted inside the sandbox. */
// In the sandbox's own /tmp (a tmpfs, so bwrap can make the mount point; the rest is read-only).
export const SANDBOX_PROXY_SOCKET = '/tmp/.tools-runtime-proxy.sock';

const isUnder = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);

/** The real path of `given` and whether it is a folder; undefined when it does not exist. */
function realEntry(given: string): { real: string; dir: boolean } | undefined {
  try {
    const real = realpathSync(given);
    return { real, dir: statSync(real).isDirectory() };
  } catch {
    return undefined;
  }
}

/**
 * The shell line run inside the sandbox under `network: allow`: socat listens on
 * 127.0.0.1:SANDBOX_PROXY_PORT of the sandbox's own network namespace and relays each connection
 * to the proxy's Unix socket; the command starts once it listens (bounded: 2 s), as socat's child
 * of nothing (`exec "$@"`), so the command's exit ends the sandbox and socat with it.
 */
function proxyLauncher(socat: string): string[] {
  const script = [
    `'${socat}' TCP-LISTEN:${SANDBOX_PROXY_PORT},bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:${SANDBOX_PROXY_SOCKET} 2>/dev/null &`,
    'i=0',
    `while ! (exec 3<>/dev/tcp/127.0.0.1/${SANDBOX_PROXY_PORT}) 2>/dev/null && [ $i -lt 200 ]; do sleep 0.01; i=$((i+1)); done`,
    'exec "$@"',
  ].join('\n');
  return ['/bin/bash', '-c', script, 'tools-runtime-proxy-bridge'];
}

/**
 * Turns a command and the policy it runs under into what to exec. Under `mode: 'off'` that is the
 * command itself. Otherwise bubblewrap in front of it:
 * - the whole file system read-only (`--ro-bind / /`), a fresh `/dev` and `/proc`, a private `/tmp`;
 * - the workspace writable under `workspace-write` (its `.git/hooks` read-only, so nothing run
 *   later by the operator's git is planted), read-only under `read-only`;
 * - every hidden path masked after the workspace is mounted, so it is hidden even under the
 *   workspace: an empty read-only tmpfs over a folder, `/dev/null` over a file; symlinks are
 *   resolved first (a mount lands on the real path, which every link to it reaches);
 * - new user (with further user namespaces disabled), PID, IPC, UTS and cgroup namespaces, and a
 *   new network namespace unless the network is `on`; every capability dropped; no_new_privs is
 *   bwrap's own; `--new-session` (no TIOCSTI into the sidecar's terminal); `--die-with-parent`.
 * The PID namespace is what kills everything at the end: its init is bwrap's, and when it dies (the
 * command ended, or the outer bwrap was killed, or the sidecar died: `--die-with-parent`), the
 * kernel kills every process in it, whatever it did to leave its process group.
 *
 * Pure apart from resolving the hidden paths on the file system; separate from spawning so a PTY
 * library can exec the same `{ file, args, env, cwd }`.
 */
export function buildSandboxArgv(options: CommandSpec & { policy: SandboxPolicy; bwrap: string; proxy?: ProxyEndpoint }): ExecSpec {
  const { policy, argv } = options;
  if (policy.mode === 'off') return { file: argv[0], args: argv.slice(1), env: options.env, cwd: options.cwd };
  const workspace = realEntry(policy.workspace)?.real ?? policy.workspace;
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'];
  args.push(policy.mode === 'workspace-write' ? '--bind' : '--ro-bind', workspace, workspace);
  if (policy.mode === 'workspace-write') {
    const hooks = realEntry(path.join(workspace, '.git', 'hooks'));
    if (hooks?.dir && isUnder(hooks.real, workspace)) args.push('--ro-bind', hooks.real, hooks.real);
  }
  // Read-only once the readable exceptions are mounted in it (their mount points are made in the tmpfs).
  const remounts: string[] = [];
  for (const given of policy.hide) {
    const entry = realEntry(given);
    if (!entry || entry.real === '/') continue;
    // What lies under /tmp is gone already (a fresh tmpfs) unless the workspace brought it back.
    if (isUnder(entry.real, '/tmp') && !isUnder(entry.real, workspace)) continue;
    if (entry.dir) {
      args.push('--tmpfs', entry.real);
      remounts.push('--remount-ro', entry.real);
    }
    else args.push('--ro-bind', '/dev/null', entry.real);
  }
  for (const given of policy.readable) {
    const entry = realEntry(given);
    if (entry) args.push('--ro-bind', entry.real, entry.real);
  }
  args.push(...remounts);
  args.push('--unshare-user', '--disable-userns', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  const env: NodeJS.ProcessEnv = { ...options.env, TMPDIR: '/tmp' };
  let command: string[] = [...argv];
  // The agent's shared namespace (agent-network.ts): joined before bwrap starts, bridge included.
  const join = policy.network.mode !== 'on' ? options.joinNetwork : undefined;
  if (policy.network.mode !== 'on' && !join) args.push('--unshare-net');
  if (policy.network.mode === 'allow' && (options.proxy || join)) {
    const proxyUrl = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
    Object.assign(env, { HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, http_proxy: proxyUrl, https_proxy: proxyUrl, NO_PROXY: '', no_proxy: '' });
    if (!join && options.proxy) {
      args.push('--ro-bind', options.proxy.socketPath, SANDBOX_PROXY_SOCKET);
      command = [...proxyLauncher(options.proxy.socat), ...argv];
    }
  }
  args.push('--cap-drop', 'ALL', ...(options.terminal ? [] : ['--new-session']), '--die-with-parent', '--chdir', realEntry(options.cwd)?.real ?? options.cwd, '--', ...command);
  if (join) return { file: join.nsenter, args: [`--net=${join.netns}`, '--', options.bwrap, ...args], env, cwd: options.cwd };
  return { file: options.bwrap, args, env, cwd: options.cwd };
}
