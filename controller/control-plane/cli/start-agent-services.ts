import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimePath } from '../../../src/runtime-path.js';
import type { CliOptions } from '../../cli-options.js';
import { EMBEDDED_MODEL_NAME, startEmbeddedModel } from '../../model/embedded-model.js';
import { createOpenAIResponsesModel } from '../../model/openai-responses-model.js';
import type { ResponsesModel } from '../../model/responses-model.js';
import { createSidecarClient, type SidecarClient } from '../../sidecar-client/create-sidecar-client.js';
import { spawnSidecar } from '../../sidecar-client/spawn-sidecar.js';

const sampleWorkspace = runtimePath('controller/sample-workspace/');

/** A sidecar client and a model, as `npm start`'s flags describe them. */
export interface AgentServices {
  client: SidecarClient;
  model: ResponsesModel;
}

/**
 * Starts what the CLI's model and sidecar flags ask for, as `npm start` does: a sidecar child over
 * `--workspace` (or a temporary copy of the sample workspace, with throwaway state) unless
 * `--sidecar` names a running one; the embedded model unless a key or `--base-url` is given.
 * Pushes a cleanup for everything it starts onto `cleanups` (run them in reverse order).
 *
 * @throws ToolRuntimeError `sidecar_unavailable` when the sidecar does not start; `aborted` when
 *   `signal` aborts; a file error for an unreadable `--token-file`.
 */
export async function startAgentServices(options: CliOptions, cleanups: Array<() => Promise<void>>, signal: AbortSignal, progress: (line: string) => void): Promise<AgentServices> {
  let address = options.sidecar;
  let token: string | undefined;
  if (options.tokenFile) token = (await readFile(options.tokenFile, 'utf8')).split('\n')[0]?.trim();
  if (!address) {
    let workspace = options.workspace;
    const extraArgs: string[] = [];
    if (!workspace) {
      const scratch = await mkdtemp(join(tmpdir(), 'controller-'));
      cleanups.push(() => rm(scratch, { recursive: true, force: true }));
      workspace = join(scratch, 'workspace');
      await cp(sampleWorkspace, workspace, { recursive: true });
      extraArgs.push('--state-dir', join(scratch, 'state'));
    }
    progress(`▶ starting the sidecar over ${workspace}`);
    const spawned = await spawnSidecar({ workspace, signal, extraArgs });
    cleanups.push(() => spawned.stop());
    address = spawned.address;
  }
  let baseURL = options.baseURL;
  if (options.embedded) {
    const embedded = await startEmbeddedModel({ signal });
    cleanups.push(() => embedded.close());
    baseURL = embedded.baseURL;
  }
  const model = createOpenAIResponsesModel({
    model: options.embedded ? EMBEDDED_MODEL_NAME : options.model,
    apiKey: options.embedded ? 'embedded-no-key' : (options.apiKey ?? 'no-key'),
    ...(baseURL ? { baseURL } : {}),
    stream: options.stream,
    includeEncryptedReasoning: !options.embedded && (!baseURL || new URL(baseURL).hostname === 'api.openai.com'),
  });
  const client = createSidecarClient({ address, ...(token ? { token } : {}) });
  cleanups.push(async () => client.close());
  return { client, model };
}
