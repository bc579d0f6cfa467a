import type { CliOptions } from '../../cli/cli-options.js';
import { connectCliSidecar, createCliModel } from '../../cli/cli-services.js';
import type { ResponsesModel } from '../../model/responses-model.js';
import { readFileSync } from 'node:fs';
import { createSidecarClient, type SidecarClient } from '../../sidecar-client/create-sidecar-client.js';
import { withTurnFeatures } from '../../cli/with-turn-features.js';

/** A sidecar client and a model, as `npm start`'s flags describe them. */
export interface AgentServices {
  client: SidecarClient;
  model: ResponsesModel;
}

/**
 * Starts what the CLI's model and sidecar flags ask for, as `npm start` does: a sidecar child over
 * `--workspace` (or a temporary copy of the sample workspace, with throwaway state) unless
 * `--sidecar` names a running one (over TLS with `--ca-file`); the embedded model unless a key or
 * `--base-url` is given. Its turns turn on what `--brain`/`--enable-brain` and `--skill` ask.
 * Pushes a cleanup for everything it starts onto `cleanups` (run them in reverse order).
 *
 * @throws ToolRuntimeError `sidecar_unavailable` when the sidecar does not start; `aborted` when
 *   `signal` aborts; a file error for an unreadable `--token-file`.
 */
export async function startAgentServices(options: CliOptions, cleanups: Array<() => Promise<void>>, signal: AbortSignal, progress: (line: string) => void): Promise<AgentServices> {
  const starting = createCliModel(options, cleanups, signal);
  starting.catch(() => {}); // awaited below; a failure surfaces there
  const { address, token } = await connectCliSidecar(options, cleanups, signal, progress);
  const model = await starting;
  const ca = options.caFile ? readFileSync(options.caFile) : undefined;
  const channel = createSidecarClient({ address, ...(token ? { token } : {}), ...(ca ? { tls: { ca } } : {}) });
  cleanups.push(async () => channel.close());
  // --brain / --enable-brain and --skill reach every task turn.
  return { client: withTurnFeatures(channel, options.turnFeatures), model };
}
