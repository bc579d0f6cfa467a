import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { ToolRuntimeError } from '../../../../src/index.js';
import { buildSandboxArgv } from './bwrap-argv.js';

/** Whether this machine can run the sandbox: bubblewrap's path, or why not and what fixes it. */
export type SandboxProbe = { ok: true; bwrap: string } | { ok: false; cause: string; fix: string };

/** Names the bwrap executable when it is not `bwrap` on PATH (and lets tests name a missing one). */
export const BWRAP_ENV = 'TOOLS_RUNTIME_BWRAP';

const OFF_FIX = 'or start the sidecar with --sandbox off (commands then run unconfined, with the sidecar\'s own rights)';

/** `bwrap` on PATH (or $TOOLS_RUNTIME_BWRAP), undefined when absent. */
function findBwrap(env: NodeJS.ProcessEnv): string | undefined {
  const named = env[BWRAP_ENV];
  const candidates = named ? [named] : (env.PATH ?? '/usr/bin:/bin').split(':').filter(Boolean).map((dir) => path.join(dir, 'bwrap'));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  return undefined;
}

/**
 * Runs `/bin/true` once under the same namespaces and mounts every sandboxed command gets (network
 * off, read-only), bounded by 10 s: a bwrap that is installed but refused by the kernel (user
 * namespaces disabled, a seccomp or AppArmor profile) is found here, at start-up, not at the first
 * command. Never rejects.
 */
export function runSandboxProbe(env: NodeJS.ProcessEnv = process.env): Promise<SandboxProbe> {
  const bwrap = findBwrap(env);
  if (!bwrap) {
    return Promise.resolve({
      ok: false,
      cause: env[BWRAP_ENV] ? `${env[BWRAP_ENV]} (${BWRAP_ENV}) is not an executable` : 'bubblewrap (bwrap) is not installed',
      fix: `install it (apt-get install bubblewrap), ${OFF_FIX}`,
    });
  }
  const spec = buildSandboxArgv({
    argv: ['/bin/true'],
    cwd: '/',
    env: { PATH: '/usr/bin:/bin' },
    bwrap,
    policy: { mode: 'read-only', network: { mode: 'off' }, workspace: '/usr', hide: [], readable: [] },
  });
  return new Promise((resolve) => {
    execFile(spec.file, spec.args, { env: spec.env, timeout: 10_000, killSignal: 'SIGKILL' }, (error, _stdout, stderr) => {
      if (!error) return resolve({ ok: true, bwrap });
      const said = stderr.trim().split('\n').at(-1) || error.message;
      const userns = /namespace|uid map|Operation not permitted|Permission denied|setting up/i.test(said);
      resolve({
        ok: false,
        cause: `${bwrap} could not start a sandbox: ${said}`,
        fix: userns
          ? `allow user namespaces for this user (sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0; in a container, the securityContext in docs/sandbox.md), ${OFF_FIX}`
          : `check the bubblewrap installation (apt-get install bubblewrap), ${OFF_FIX}`,
      });
    });
  });
}

let shared: Promise<SandboxProbe> | undefined;

/** This process's one probe, run on the first call (the CLI calls it at start-up). */
export function sandboxProbe(): Promise<SandboxProbe> {
  shared ??= runSandboxProbe();
  return shared;
}

/** The error every process-starting tool answers with when the sandbox cannot be had. */
export function sandboxUnavailableError(probe: Extract<SandboxProbe, { ok: false }>): ToolRuntimeError {
  return new ToolRuntimeError('sandbox_unavailable', `nothing was run: the sandbox this sidecar requires cannot be had (${probe.cause}). Fix: ${probe.fix}.`);
}
