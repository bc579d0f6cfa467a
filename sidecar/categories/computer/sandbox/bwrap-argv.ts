import { accessSync, constants, lstatSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { isUnder, resolveHiddenPaths } from './file-access.js';
import { findGitMetadata } from './git-metadata.js';
import type { SandboxPolicy } from './sandbox-policy.js';
import { SECCOMP_FD, seccompFilterFile, seccompLauncher } from './seccomp-filter.js';

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

/**
 * The writable `/proc` knobs of the host that a sandbox's root (the host's uid 0 when the sidecar
 * is root) could otherwise write: every sysctl (`kernel.core_pattern` runs a program as the host's
 * root on any crash), and the SysRq trigger. bwrap covers `/proc/irq` and `/proc/bus` itself.
 */
const PROC_READ_ONLY = ['/proc/sys', '/proc/sysrq-trigger'];

/**
 * The host's runtime folders: where its daemons keep their sockets (`/run/docker.sock`,
 * containerd, D-Bus's system bus, systemd's private socket, PostgreSQL's). A read-only mount does
 * not stop connect(), and AF_UNIX is open to commands under `network: off` and `allow:`, so each is
 * covered by an empty tmpfs in the sandbox. `/var/run` is usually a link to `/run`; it is covered
 * when it is a folder of its own.
 */
const RUNTIME_FOLDERS = ['/run', '/var/run'];

/** The runtime folders to cover on this host, and the files under them commands still need (resolv.conf's target). */
export function runtimeFolderMounts(folders: readonly string[] = RUNTIME_FOLDERS, needed: readonly string[] = ['/etc/resolv.conf']): { covered: string[]; kept: string[] } {
  const covered = folders.filter((folder) => {
    try {
      return !lstatSync(folder).isSymbolicLink() && statSync(folder).isDirectory();
    } catch {
      return false;
    }
  });
  // systemd-resolved and resolvconf make /etc/resolv.conf a link into /run: its target stays readable.
  const kept = needed.flatMap((file) => {
    const real = realEntry(file);
    return real && !real.dir && covered.some((folder) => isUnder(real.real, folder)) ? [real.real] : [];
  });
  return { covered, kept };
}

/** The real path of `given` and whether it is a folder; undefined when it does not exist. */
function realEntry(given: string): { real: string; dir: boolean } | undefined {
  try {
    const real = realpathSync(given);
    return { real, dir: statSync(real).isDirectory() };
  } catch {
    return undefined;
  }
}

/** Whether this process may create entries in `folder`. */
function writableFolder(folder: string): boolean {
  try {
    accessSync(folder, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** The folders strictly between `root` and `target` (`root/a`, `root/a/b` for `root/a/b/c`). */
function foldersBetween(root: string, target: string): string[] {
  const folders: string[] = [];
  for (let at = path.dirname(target); at !== root && isUnder(at, root); at = path.dirname(at)) folders.unshift(at);
  return folders;
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

/** What buildSandboxArgv needs besides the command. */
export interface SandboxArgvOptions extends CommandSpec {
  policy: SandboxPolicy;
  bwrap: string;
  proxy?: ProxyEndpoint;
  /**
   * Default true: load the seccomp filter (seccomp-filter.ts) through `--seccomp 3`, the exec then
   * being `/bin/sh` opening the filter as descriptor 3 before it execs bwrap. False: no filter
   * (only for tests that look at bwrap's own arguments).
   */
  seccomp?: boolean;
}

/**
 * Turns a command and the policy it runs under into what to exec. Under `mode: 'off'` that is the
 * command itself. Otherwise bubblewrap in front of it, mounts in this order (a later one covers an
 * earlier one; bind sources are the host's, so pins come before what they must not cover):
 * - the whole file system read-only (`--ro-bind / /`), a fresh `/dev` and `/proc` with `/proc/sys`
 *   and `/proc/sysrq-trigger` read-only, a private `/tmp`, an empty read-only `/run` (the host's
 *   daemons' sockets; resolv.conf's target in it kept);
 * - the workspace, writable under `workspace-write`, read-only under `read-only`;
 * - under `workspace-write`: each folder between the workspace and a hidden path in it bound onto
 *   itself (a mount point cannot be renamed, so `mv conf conf2` cannot carry a hidden file out
 *   from under its mount); then git metadata read-only (every `.git` and gitdir the bounded scan
 *   finds, see git-metadata.ts) and the missing `.git` names reserved as empty read-only folders,
 *   so `git init` or `echo gitdir: > .git` cannot make one;
 * - every hidden path masked (resolved now, failing closed: see resolveHiddenPaths): an empty
 *   read-only tmpfs over a folder, `/dev/null` over a file, at its real path, so every link to it
 *   reaches the mask; then the readable exceptions under them;
 * - new user (with further user namespaces disabled), PID, IPC, UTS and cgroup namespaces, and a
 *   new network namespace unless the network is `on`; every capability dropped; no_new_privs is
 *   bwrap's own; `--new-session` (no TIOCSTI into the sidecar's terminal); `--die-with-parent`;
 * - the seccomp filter: no setuid or setgid bits, and no `socket(AF_UNIX)` under `network: on`.
 * The PID namespace is what kills everything at the end: its init is bwrap's, and when it dies (the
 * command ended, or the outer bwrap was killed, or the sidecar died: `--die-with-parent`), the
 * kernel kills every process in it, whatever it did to leave its process group.
 *
 * Separate from spawning so a PTY library can exec the same `{ file, args, env, cwd }`.
 *
 * @throws ToolRuntimeError `sandbox_unavailable` when a hidden path under the workspace has gone
 *   or been replaced (see resolveHiddenPaths): nothing may run until it is back.
 */
export function buildSandboxArgv(options: SandboxArgvOptions): ExecSpec {
  const { policy, argv } = options;
  if (policy.mode === 'off') return { file: argv[0], args: argv.slice(1), env: options.env, cwd: options.cwd };
  const workspace = realEntry(policy.workspace)?.real ?? policy.workspace;
  const writable = policy.mode === 'workspace-write';
  const args = ['--ro-bind', '/', '/', '--dev', '/dev'];
  // Sized: the limits' /tmp bound (ENOSPC past it), and /dev/shm, --dev's own tmpfs, likewise.
  if (options.tmpBytes !== undefined) args.push('--size', String(options.tmpBytes), '--tmpfs', '/dev/shm');
  args.push('--proc', '/proc');
  for (const knob of PROC_READ_ONLY) args.push('--ro-bind-try', knob, knob);
  if (options.tmpBytes !== undefined) args.push('--size', String(options.tmpBytes));
  args.push('--tmpfs', '/tmp');
  // The host's daemons' sockets: an empty read-only tmpfs over /run (see RUNTIME_FOLDERS).
  const runtime = runtimeFolderMounts();
  const remounts: string[] = [];
  for (const folder of runtime.covered) {
    args.push('--tmpfs', folder);
    remounts.push('--remount-ro', folder);
  }
  for (const file of runtime.kept) args.push('--ro-bind', file, file);
  args.push(writable ? '--bind' : '--ro-bind', workspace, workspace);
  // Only the outermost of nested hidden paths is mounted (a mount inside a tmpfs already covered
  // would be lost, and its remount would fail).
  const hidden = resolveHiddenPaths(policy)
    .filter((entry) => entry.real !== '/')
    // What lies under /tmp or /run is gone already (a fresh tmpfs) unless the workspace brought it back.
    .filter((entry) => ![...runtime.covered, '/tmp'].some((fresh) => isUnder(entry.real, fresh)) || isUnder(entry.real, workspace));
  const masks = hidden.filter((entry) => !hidden.some((other) => other !== entry && other.real !== entry.real && isUnder(entry.real, other.real)));
  // Read-only once the readable exceptions are mounted in it (their mount points are made in the tmpfs).
  if (writable) {
    const git = findGitMetadata(workspace);
    const pins = new Set(masks.filter((entry) => isUnder(entry.real, workspace)).flatMap((entry) => foldersBetween(workspace, entry.real)));
    for (const folder of [...pins].sort()) if (!git.readOnly.some((meta) => isUnder(folder, meta))) args.push('--bind', folder, folder);
    for (const meta of git.readOnly) args.push('--ro-bind', meta, meta);
    // A folder the sidecar's user cannot write needs no reservation (its commands cannot create
    // the name either), and bwrap could not make the mount point in it.
    for (const name of git.reserve.filter((reserved) => writableFolder(path.dirname(reserved)))) {
      args.push('--tmpfs', name);
      remounts.push('--remount-ro', name);
    }
  }
  const masked = new Set<string>();
  for (const entry of masks) {
    if (masked.has(entry.real)) continue;
    masked.add(entry.real);
    if (entry.dir) {
      args.push('--tmpfs', entry.real);
      remounts.push('--remount-ro', entry.real);
    } else args.push('--ro-bind', '/dev/null', entry.real);
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
  // Under `on` the sandbox shares the host's network namespace, and with it the host's abstract
  // Unix sockets (D-Bus, X11, containerd's shims...): the filter refuses socket(AF_UNIX).
  const filter = options.seccomp === false ? undefined : seccompFilterFile({ denyUnixSockets: policy.network.mode === 'on' });
  if (filter) args.push('--seccomp', String(SECCOMP_FD));
  args.push('--cap-drop', 'ALL', ...(options.terminal ? [] : ['--new-session']), '--die-with-parent', '--chdir', realEntry(options.cwd)?.real ?? options.cwd, '--', ...command);
  const exec = filter ? seccompLauncher(filter, options.bwrap, args) : { file: options.bwrap, args };
  if (join) return { file: join.nsenter, args: [`--net=${join.netns}`, '--', exec.file, ...exec.args], env, cwd: options.cwd };
  return { ...exec, env, cwd: options.cwd };
}
