import { realpathSync } from 'node:fs';
import path from 'node:path';
import { ToolRuntimeError } from '../../../../src/index.js';
import type { SandboxPolicy } from './sandbox-policy.js';

const isUnder = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);

const real = (given: string) => {
  try {
    return realpathSync(given);
  } catch {
    return path.resolve(given);
  }
};

/**
 * A test on absolute paths (real, as resolveWorkspacePath gives them): true for a path the policy
 * hides (at or under a hidden path, and not under one of its readable exceptions). Hidden paths are
 * resolved once, when the test is made (a turn's tools make it once).
 */
export function hiddenPathTest(policy: SandboxPolicy): (absolute: string) => boolean {
  const hidden = policy.hide.map(real);
  const readable = policy.readable.map(real);
  if (hidden.length === 0) return () => false;
  return (absolute) => hidden.some((root) => isUnder(absolute, root)) && !readable.some((root) => isUnder(absolute, root));
}

/**
 * The file tools' side of the sandbox: the same rules the commands are held to, checked on a path
 * already resolved inside the workspace. A hidden path is neither read nor written; under
 * `read-only` nothing is written; under `workspace-write` the workspace's `.git/hooks` is not
 * written (commands see it read-only).
 *
 * @throws ToolRuntimeError `sandbox_denied` saying which rule refused.
 */
export function checkFileAccess(policy: SandboxPolicy, isHidden: (absolute: string) => boolean, absolute: string, shown: string, access: 'read' | 'write'): void {
  if (isHidden(absolute)) throw new ToolRuntimeError('sandbox_denied', `${shown} is hidden by the sidecar's sandbox (it holds the sidecar's secrets or state); it cannot be read or written`);
  if (access === 'read') return;
  if (policy.mode === 'read-only') throw new ToolRuntimeError('sandbox_denied', `the sidecar's sandbox is read-only (--sandbox read-only): ${shown} cannot be written`);
  if (policy.mode === 'workspace-write' && isUnder(absolute, path.join(real(policy.workspace), '.git', 'hooks'))) {
    throw new ToolRuntimeError('sandbox_denied', `${shown} is under .git/hooks, which the sandbox keeps read-only (a hook would run outside the sandbox)`);
  }
}
