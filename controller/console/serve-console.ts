import type { Logger } from '../../src/index.js';
import type { ControlReply, ControlRequest } from '../../src/gen/toolruntime/v1/control_plane.js';
import type { ControlPlaneStore } from '../control-plane/domain/control-plane-store.js';
import type { ConsoleAgent } from './console-state.js';
import { controlTokenPath, removeTokenFile, writeTokenFile } from '../control-plane/grpc/control-token.js';
import { consoleLinkWithToken, readConsoleToken, type ConsoleFlags } from './console-flags.js';
import { startConsoleServer, type ConsoleServer } from './console-server.js';
import type { TurnFeed } from './turn-feed.js';

/**
 * Starts the console of `controller serve --console ADDR`: the job, schedule and workflow task
 * turns this process runs (recorded in `feed` by their onEvent hooks), every agent's sidecar health,
 * and the store ControlPlaneService serves; cancel goes through `answer` (ControlPlaneService's own
 * path, as an operator) and approve/deny through the store's approvals, as DecideApproval does. The
 * token is `--console-token-file`'s, or serve's own when that is absent. When serve generated its
 * own, it is also written 0600 to `<dataDir>/tokens/console-<address>.token` (removed on close)
 * and the console's address is logged once with the token in its fragment.
 *
 * @throws ToolRuntimeError `invalid_request` when the token file cannot be read or the address
 *   cannot be served.
 */
export async function startServeConsole(options: {
  flags: ConsoleFlags;
  feed: TurnFeed;
  store: ControlPlaneStore;
  agents: () => ConsoleAgent[];
  answer: (request: ControlRequest) => Promise<ControlReply>;
  /** Serve's ControlPlaneService token. */
  serveToken: string;
  /** Whether serve generated `serveToken` (no `--token-file`). */
  generated: boolean;
  dataDir: string;
  logger: Logger;
}): Promise<ConsoleServer> {
  const token = options.flags.tokenFile ? await readConsoleToken(options.flags.tokenFile) : options.serveToken;
  const server = await startConsoleServer({
    address: options.flags.address,
    token,
    feed: options.feed,
    store: options.store,
    agents: options.agents,
    answer: options.answer,
    decideStoredApproval: (approvalId, decision) => options.store.approvals.decide(approvalId, decision),
  });
  if (options.flags.tokenFile || !options.generated) {
    options.logger.info('console serving', { url: server.url, tokenFile: options.flags.tokenFile ?? 'the --token-file of serve' });
    return server;
  }
  const tokenFile = controlTokenPath({ dataDir: options.dataDir, kind: 'console', address: server.address });
  try {
    await writeTokenFile(tokenFile, token);
  } catch (error) {
    await server.close();
    throw error;
  }
  // The one record that carries the token (as Jupyter prints its URL); nothing logs it again.
  options.logger.info('console serving', { url: consoleLinkWithToken(server.url, token), tokenFile });
  return {
    url: server.url,
    address: server.address,
    async close() {
      await server.close();
      await removeTokenFile(tokenFile, token);
    },
  };
}
