import type { Logger } from '../../src/index.js';
import type { ControlReply, ControlRequest } from '../../src/gen/toolruntime/v1/control_plane.js';
import type { ControlPlaneStore } from '../control-plane/store/control-plane-store.js';
import type { ConsoleAgent } from './console-state.js';
import { readConsoleToken, type ConsoleFlags } from './console-flags.js';
import { startConsoleServer, type ConsoleServer } from './console-server.js';
import type { TurnFeed } from './turn-feed.js';

/**
 * Starts the console of `controller serve --console ADDR`: the job, schedule and workflow task
 * turns this process runs (recorded in `feed` by their onEvent hooks), every agent's sidecar health,
 * and the store ControlPlaneService serves; cancel goes through `answer` (ControlPlaneService's own
 * path, as an operator) and approve/deny through the store's approvals, as DecideApproval does. The
 * token is `--console-token-file`'s, or serve's own when that is absent.
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
  serveToken?: string;
  logger: Logger;
}): Promise<ConsoleServer> {
  const token = options.flags.tokenFile ? await readConsoleToken(options.flags.tokenFile) : options.serveToken;
  const server = await startConsoleServer({
    address: options.flags.address,
    ...(token ? { token } : {}),
    feed: options.feed,
    store: options.store,
    agents: options.agents,
    answer: options.answer,
    decideStoredApproval: (approvalId, decision) => options.store.approvals.decide(approvalId, decision),
  });
  options.logger.info('console serving', { url: server.url, auth: token !== undefined });
  return server;
}
