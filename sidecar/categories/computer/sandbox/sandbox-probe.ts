import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { ToolRuntimeError } from '../../../../src/errors.js';
import { buildSandboxArgv } from './bwrap-argv.js';

/**
 * Whether this machine can run the sandbox: bubblewrap's path, or why not and what fixes it (and,
 * from the shared prober, when it probes again).
 */
export type SandboxProbe = { ok: true; bwrap: string } | { ok: false; cause: string; fix: string; retryInMs?: number };

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

/** A probe that is run again, with backoff, while it fails. */
export interface SandboxProber {
  /**
   * The last probe's answer. The first call runs the probe; after a failure, a call once the
   * backoff has passed runs it again (a command that needs the sandbox is what asks), and a call
   * before that answers the failure with `retryInMs`. A success is kept for good.
   */
  probe(): Promise<SandboxProbe>;
  /** Hears every probe's answer (a failure with its `retryInMs`); returns the unsubscribe. */
  onChange(listener: (probe: SandboxProbe) => void): () => void;
}

/**
 * One failed probe (a 10 s timeout on a loaded machine, bubblewrap installed after start-up) must
 * not disable commands until a restart: the prober probes again after 1 s, 2 s, 4 s ... capped at
 * `maxDelayMs` (60 s), on a timer of its own (unref'd) and whenever a command asks after the delay.
 */
export function createSandboxProber(options: { run: () => Promise<SandboxProbe>; baseDelayMs?: number; maxDelayMs?: number; now?: () => number }): SandboxProber {
  const base = options.baseDelayMs ?? 1_000;
  const max = options.maxDelayMs ?? 60_000;
  const now = options.now ?? Date.now;
  const listeners = new Set<(probe: SandboxProbe) => void>();
  let current: Promise<SandboxProbe> | undefined;
  let failures = 0;
  let retryAt = 0;
  let timer: NodeJS.Timeout | undefined;

  const start = (): Promise<SandboxProbe> => {
    clearTimeout(timer);
    const running = options.run().then((answer) => {
      if (answer.ok) {
        failures = 0;
      } else {
        const delay = Math.min(max, base * 2 ** failures);
        failures++;
        retryAt = now() + delay;
        answer = { ...answer, retryInMs: delay };
        timer = setTimeout(() => void start(), delay);
        timer.unref?.();
      }
      for (const listener of listeners) listener(answer);
      return answer;
    });
    current = running;
    return running;
  };

  return {
    async probe() {
      if (!current) return start();
      const pending = current;
      const last = await pending;
      if (last.ok) return last;
      // Another caller (or the timer) started a newer probe meanwhile: share its answer.
      if (current !== pending) return current;
      const left = retryAt - now();
      if (left <= 0) return start();
      return { ...last, retryInMs: left };
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

let shared: SandboxProber | undefined;

/** This process's one prober (the CLI starts it at start-up; commands probe through it). */
export function sandboxProber(): SandboxProber {
  shared ??= createSandboxProber({ run: () => runSandboxProbe() });
  return shared;
}

/** This process's probe: the last answer, probing again after a failure once its backoff passed. */
export function sandboxProbe(): Promise<SandboxProbe> {
  return sandboxProber().probe();
}

/** The error every process-starting tool answers with when the sandbox cannot be had. */
export function sandboxUnavailableError(probe: Extract<SandboxProbe, { ok: false }>): ToolRuntimeError {
  const retry = probe.retryInMs !== undefined ? ` The sidecar probes again in ${Math.ceil(probe.retryInMs / 1_000)} s.` : '';
  return new ToolRuntimeError('sandbox_unavailable', `nothing was run: the sandbox this sidecar requires cannot be had (${probe.cause}). Fix: ${probe.fix}.${retry}`);
}
