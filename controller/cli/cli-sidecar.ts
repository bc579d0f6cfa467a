import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runtimePath } from '../../src/runtime-path.js';
import type { CliOptions } from './cli-options.js';
import { describeSidecarSandbox, spawnSidecar } from '../sidecar-client/spawn-sidecar.js';
import { sidecarFeatureArgs } from './sidecar-feature-flags.js';

// Kept light on purpose: `npm start` loads this module (and spawns the sidecar through it) before
// the rest of the controller, so nothing here may import the src/ barrel, grpc-js or zod.

/** Where the CLI's sidecar listens, and its bearer token when it has one. */
export interface CliSidecar {
  address: string;
  token?: string;
}

/**
 * The sidecar the CLI flags name: `--sidecar` with `--token-file`, or a sidecar child over
 * `--workspace` (by default a temporary copy of the sample workspace with throwaway state, both
 * removed by the cleanup). Pushes a cleanup for what it starts onto `cleanups`.
 *
 * Everything up to the child's spawn runs synchronously in the call (the copy of the sample
 * workspace is a few small files), so a caller that goes on to load modules has the sidecar
 * starting on the other core meanwhile.
 *
 * @throws ToolRuntimeError `sidecar_unavailable` when the child does not start, `aborted` when
 *   `signal` aborts; a file error for an unreadable `--token-file` or a failed copy.
 */
export async function connectCliSidecar(
  options: Pick<CliOptions, 'sidecar' | 'tokenFile' | 'workspace' | 'sandbox' | 'mcpServers'> & Partial<Pick<CliOptions, 'features'>> & { dataDir?: string; hide?: readonly string[] },
  cleanups: Array<() => Promise<void>>,
  signal: AbortSignal,
  progress: (line: string) => void,
): Promise<CliSidecar> {
  const token = options.tokenFile ? readFileSync(options.tokenFile, 'utf8').split('\n')[0]?.trim() : undefined;
  if (options.sidecar) return { address: options.sidecar, ...(token ? { token } : {}) };
  let workspace = options.workspace;
  const extraArgs: string[] = options.mcpServers ? ['--mcp-servers', resolve(options.mcpServers)] : [];
  if (!workspace) {
    const scratch = mkdtempSync(join(tmpdir(), 'controller-'));
    cleanups.push(() => rm(scratch, { recursive: true, force: true }));
    workspace = join(scratch, 'workspace');
    cpSync(runtimePath('controller/sample-workspace/'), workspace, { recursive: true });
    // A throwaway workspace gets throwaway sidecar state (its todo list), removed with it, rather
    // than a folder per run under ~/.local/state.
    extraArgs.push('--state-dir', join(scratch, 'state'));
  }
  if (options.sandbox) extraArgs.push('--sandbox', options.sandbox);
  // What its users would pass it by hand: tool modules, network, web, Brain, skills, hidden paths.
  extraArgs.push(...sidecarFeatureArgs(options.features ?? {}));
  progress(`▶ starting the sidecar over ${workspace}`);
  // The model's commands must not read the control-plane store or the console's token.
  const hide = [...(options.dataDir ? [options.dataDir] : []), ...(options.hide ?? [])];
  const spawned = await spawnSidecar({ workspace, signal, extraArgs, hide });
  cleanups.push(() => spawned.stop());
  // Shown when the sidecar has probed bubblewrap (just after it listens), without holding the turn.
  void spawned.sandbox.then((event) => event && progress(`▶ ${describeSidecarSandbox(event)}`));
  return { address: spawned.address, token: spawned.token };
}
