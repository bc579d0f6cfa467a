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
   * Size of the sandbox's private `/tmp` and `/dev/shm` (bwrap's `--size`, 0.7 or later): a write
   * past it fails with ENOSPC. Unset: unsized tmpfs (bounded only by the memory limit, if any).
   */
  tmpBytes?: number;
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
const SANDBOX_PROXY_SOCKET = '/tmp/.tools-runtime-proxy.sock';

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
  // Sized: the limits' /tmp bound (ENOSPC past it), and /dev/shm, --dev's own tmpfs, likewise.
  if (options.tmpBytes !== undefined) args.splice(args.indexOf('--tmpfs'), 0, '--size', String(options.tmpBytes));
  if (options.tmpBytes !== undefined) args.splice(args.indexOf('--proc'), 0, '--size', String(options.tmpBytes), '--tmpfs', '/dev/shm');
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
  if (policy.network.mode !== 'on') args.push('--unshare-net');
  if (policy.network.mode === 'allow' && options.proxy) {
    args.push('--ro-bind', options.proxy.socketPath, SANDBOX_PROXY_SOCKET);
    const proxyUrl = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
    Object.assign(env, { HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, http_proxy: proxyUrl, https_proxy: proxyUrl, NO_PROXY: '', no_proxy: '' });
    command = [...proxyLauncher(options.proxy.socat), ...argv];
  }
  args.push('--cap-drop', 'ALL', ...(options.terminal ? [] : ['--new-session']), '--die-with-parent', '--chdir', realEntry(options.cwd)?.real ?? options.cwd, '--', ...command);
  return { file: options.bwrap, args, env, cwd: options.cwd };
}
