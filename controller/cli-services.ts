import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimePath } from '../src/runtime-path.js';
import type { CliOptions } from './cli-options.js';
import { EMBEDDED_MODEL_NAME, startEmbeddedModel } from './model/embedded-model.js';
import type { ResponsesModel } from './model/responses-model.js';
import { spawnSidecar } from './sidecar-client/spawn-sidecar.js';

const sampleWorkspace = runtimePath('controller/sample-workspace/');

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
 * @throws ToolRuntimeError `sidecar_unavailable` when the child does not start, `aborted` when
 *   `signal` aborts; a file error for an unreadable `--token-file`.
 */
export async function connectCliSidecar(
  options: CliOptions,
  cleanups: Array<() => Promise<void>>,
  signal: AbortSignal,
  progress: (line: string) => void,
): Promise<CliSidecar> {
  const token = options.tokenFile ? (await readFile(options.tokenFile, 'utf8')).split('\n')[0]?.trim() : undefined;
  if (options.sidecar) return { address: options.sidecar, ...(token ? { token } : {}) };
  let workspace = options.workspace;
  const extraArgs: string[] = [];
  if (!workspace) {
    const scratch = await mkdtemp(join(tmpdir(), 'controller-'));
    cleanups.push(() => rm(scratch, { recursive: true, force: true }));
    workspace = join(scratch, 'workspace');
    await cp(sampleWorkspace, workspace, { recursive: true });
    // A throwaway workspace gets throwaway sidecar state (its todo list), removed with it, rather
    // than a folder per run under ~/.local/state.
    extraArgs.push('--state-dir', join(scratch, 'state'));
  }
  progress(`▶ starting the sidecar over ${workspace}`);
  const spawned = await spawnSidecar({ workspace, signal, extraArgs });
  cleanups.push(() => spawned.stop());
  return { address: spawned.address };
}

/**
 * The model the CLI flags describe: the embedded scripted model (started here, closed by the
 * cleanup) or a Responses API server, with the retry-after cap and the stream idle timeout. The
 * openai SDK is loaded here, on first use.
 *
 * @throws what starting the embedded model throws; `aborted` when `signal` aborts.
 */
export async function createCliModel(options: CliOptions, cleanups: Array<() => Promise<void>>, signal: AbortSignal): Promise<ResponsesModel> {
  const loadingModel = import('./model/openai-responses-model.js');
  loadingModel.catch(() => {}); // awaited below; a failure surfaces there
  let baseURL = options.baseURL;
  if (options.embedded) {
    const embedded = await startEmbeddedModel({ signal });
    cleanups.push(() => embedded.close());
    baseURL = embedded.baseURL;
  }
  const { createOpenAIResponsesModel } = await loadingModel;
  return createOpenAIResponsesModel({
    model: options.embedded ? EMBEDDED_MODEL_NAME : options.model,
    // Servers of one's own (vLLM, a gateway on loopback) often need no key, but the SDK refuses to
    // start without one: send a placeholder, and let a server that does check answer 401.
    apiKey: options.embedded ? 'embedded-no-key' : (options.apiKey ?? 'no-key'),
    ...(baseURL ? { baseURL } : {}),
    stream: options.stream,
    maxRetryAfterMs: options.maxRetryAfterMs,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs,
    includeEncryptedReasoning: !options.embedded && (!baseURL || new URL(baseURL).hostname === 'api.openai.com'),
  });
}
