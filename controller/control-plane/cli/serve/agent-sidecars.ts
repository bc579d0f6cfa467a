import { readFile } from 'node:fs/promises';
import { findLocalServerToken } from '../../../../src/local-servers.js';
import { errorMessage, ToolRuntimeError, type Logger } from '../../../../src/index.js';
import { createSidecarClient, type SidecarClient } from '../../../sidecar-client/create-sidecar-client.js';
import { spawnSidecar, type SpawnedSidecar } from '../../../sidecar-client/spawn-sidecar.js';
import type { AgentSidecarEntry } from './read-agents-file.js';
import { sidecarFeatureArgs } from '../../../cli/sidecar-feature-flags.js';
import { withTurnFeatures } from '../../../cli/with-turn-features.js';

/**
 * The sidecar of each agent a `serve` process runs turns for: a client per agent, over a sidecar
 * that already runs or one started (a child process) over the agent's workspace. Agents that share
 * an address share one client.
 */
export class AgentSidecars {
  readonly #clients = new Map<string, SidecarClient>();
  readonly #spawned: SpawnedSidecar[] = [];
  readonly #closers: SidecarClient[] = [];
  readonly #addresses: Array<{ agentId: string; address: string; token?: string }> = [];
  readonly #instructions = new Map<string, string>();

  private constructor() {}

  /**
   * Starts the sidecars the entries ask for (in parallel) and creates the clients.
   *
   * @throws ToolRuntimeError `invalid_request` when a token file cannot be read,
   *   `sidecar_unavailable` when a sidecar does not start, `aborted` when `signal` aborts; whatever
   *   was started is stopped first.
   */
  static async start(options: {
    agents: Map<string, AgentSidecarEntry>;
    /** Paths every started sidecar hides from the model's processes: the data folder, token files. */
    hide?: readonly string[];
    signal: AbortSignal;
    logger: Logger;
  }): Promise<AgentSidecars> {
    const sidecars = new AgentSidecars();
    const byAddress = new Map<string, SidecarClient>();
    try {
      await Promise.all(
        [...options.agents].map(async ([agentId, entry]) => {
          if (entry.kind === 'workspace') {
            const extraArgs = [
              ...(entry.stateDir ? ['--state-dir', entry.stateDir] : []),
              ...(entry.sandbox ? ['--sandbox', entry.sandbox] : []),
              ...(entry.mcpServers ? ['--mcp-servers', entry.mcpServers] : []),
              ...(entry.limits ? ['--limits', entry.limits] : []),
              ...sidecarFeatureArgs(entry.features),
            ];
            const spawned = await spawnSidecar({ workspace: entry.workspace, extraArgs, hide: options.hide ?? [], ...(entry.user ? { user: entry.user } : {}), signal: options.signal });
            sidecars.#spawned.push(spawned);
            const client = createSidecarClient({ address: spawned.address, token: spawned.token });
            sidecars.#closers.push(client);
            sidecars.#clients.set(agentId, withTurnFeatures(client, entry.turnFeatures));
            if (entry.instructions !== undefined) sidecars.#instructions.set(agentId, entry.instructions);
            sidecars.#addresses.push({ agentId, address: spawned.address, token: spawned.token });
            options.logger.info('sidecar started', { agentId, workspace: entry.workspace, address: spawned.address, ...(entry.user ? { uid: entry.user.uid } : {}) });
            void spawned.sandbox.then((event) => {
              if (event && !event.ok) options.logger.error('sidecar sandbox unavailable: its commands will be refused', { agentId, cause: event.cause, fix: event.fix });
              else if (event) options.logger.info('sidecar sandbox', { agentId, mode: event.mode, network: event.network });
            });
            return;
          }
          // Without a token file: the token a sidecar started by hand listed for its address.
          const token = entry.tokenFile ? await readToken(entry.tokenFile) : findLocalServerToken(entry.address, { kind: 'sidecar' });
          const ca = entry.caFile ? await readCa(entry.caFile) : undefined;
          const key = `${entry.address}\u0000${token ?? ''}\u0000${entry.caFile ?? ''}`;
          let client = byAddress.get(key);
          if (!client) {
            client = createSidecarClient({ address: entry.address, ...(token ? { token } : {}), ...(ca ? { tls: { ca } } : {}) });
            byAddress.set(key, client);
            sidecars.#closers.push(client);
          }
          sidecars.#clients.set(agentId, withTurnFeatures(client, entry.turnFeatures));
          if (entry.instructions !== undefined) sidecars.#instructions.set(agentId, entry.instructions);
          sidecars.#addresses.push({ agentId, address: entry.address, ...(token ? { token } : {}) });
        }),
      );
    } catch (error) {
      await sidecars.close();
      throw error;
    }
    return sidecars;
  }

  /** The agents, in the agents file's order. */
  get agentIds(): string[] {
    return [...this.#clients.keys()];
  }

  /**
   * The client of `agentId`'s sidecar.
   *
   * @throws ToolRuntimeError `invalid_request` for an agent the agents file does not name.
   */
  clientFor(agentId: string): SidecarClient {
    const client = this.#clients.get(agentId);
    if (!client) throw new ToolRuntimeError('invalid_request', `agent "${agentId}" is not in this controller's agents file`);
    return client;
  }

  /** The system prompt the agents file gives `agentId`'s job and scheduled turns, if any. */
  instructionsFor(agentId: string): string | undefined {
    return this.#instructions.get(agentId);
  }

  /** Where each agent's sidecar listens (and its token), for health checks (the web console). */
  sidecarAddresses(): Array<{ agentId: string; address: string; token?: string }> {
    return [...this.#addresses];
  }

  /** Closes the clients and stops the started sidecars (SIGTERM, then SIGKILL after a grace). */
  async close(): Promise<void> {
    for (const client of this.#closers) client.close();
    await Promise.all(this.#spawned.map((sidecar) => sidecar.stop({ graceMs: 5_000 })));
  }
}

async function readCa(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', `cannot read the CA file ${path}: ${errorMessage(error)}`);
  }
}

async function readToken(path: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', `cannot read the token file ${path}: ${errorMessage(error)}`);
  }
  const token = text.split('\n')[0]?.trim() ?? '';
  if (token === '') throw new ToolRuntimeError('invalid_request', `the token file ${path} is empty`);
  return token;
}
