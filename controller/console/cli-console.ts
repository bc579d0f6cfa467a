import { answerControlRequest } from '../control-plane/grpc/answer-control-request.js';
import type { ControlPlaneStore } from '../control-plane/domain/control-plane-store.js';
import { openControlPlaneStore } from '../control-plane/store/open-control-plane-store.js';
import type { TurnEvent } from '../loop/turn-events.js';
import type { ApproveCallback } from '../sidecar-client/sidecar-types.js';
import { ConsoleApprovals } from './console-approvals.js';
import { controlTokenPath, generateControlToken, makeDataDirPrivate, removeTokenFile, writeTokenFile } from '../control-plane/grpc/control-token.js';
import { consoleLinkWithToken, readConsoleToken, type ConsoleFlags } from './console-flags.js';
import { startConsoleServer, type ConsoleServer } from './console-server.js';
import { TurnFeed } from './turn-feed.js';

/** The console of one `npm start` turn. */
export interface CliConsole {
  /** The console's address, without the token (for later mentions). */
  readonly url: string;
  /** The address with the token in its fragment: print it once, at start. */
  readonly linkWithToken: string;
  /** The token file: `--console-token-file`, or the one written under the data folder. */
  readonly tokenFile: string;
  /** The turn's onEvent: records the event, then calls `next`. */
  onEvent(meta: { turnId: string; agentId: string; label: string }, next: (event: TurnEvent) => void): (event: TurnEvent) => void;
  /** The turn's approver: its calls wait for the page's decision. */
  approverFor(meta: { turnId: string; agentId: string }): ApproveCallback;
  /** Lets the page's cancel button abort the turn. */
  onCancel(turnId: string, abort: () => void): void;
  /** Resolves when `signal` aborts (Ctrl-C), serving meanwhile. */
  serveUntil(signal: AbortSignal): Promise<void>;
  /** Denies waiting approvals, stops the server, closes the store. */
  close(): Promise<void>;
}

/**
 * Starts the console of `npm start -- --console`: the turn's events live, its approvals decided
 * from the page, and the agent's workflow runs, schedules and jobs from the store at `dataDir` (the
 * one the turn's control-plane tools write), with cancel acting as the turn's agent. Its API needs
 * a token: `--console-token-file`'s, or one generated now and written 0600 to
 * `<dataDir>/tokens/console-<address>.token` (removed by `close`).
 *
 * @throws ToolRuntimeError `invalid_request` when the token file cannot be read or written, or the
 *   address cannot be served (bad form, in use).
 */
export async function startCliConsole(options: { flags: ConsoleFlags; agentId: string; sidecarAddress: string; sidecarToken?: string; dataDir: string; database?: string }): Promise<CliConsole> {
  const token = options.flags.tokenFile ? await readConsoleToken(options.flags.tokenFile) : generateControlToken();
  const feed = new TurnFeed();
  const approvals = new ConsoleApprovals({ onChange: () => feed.changed('approvals') });
  const cancels = new Map<string, () => void>();
  let store: ControlPlaneStore | undefined;
  let server: ConsoleServer | undefined;
  try {
    await makeDataDirPrivate(options.dataDir);
    store = await openControlPlaneStore({ dataDir: options.dataDir, ...(options.database ? { database: options.database } : {}) });
    const opened = store;
    server = await startConsoleServer({
      address: options.flags.address,
      token,
      feed,
      localApprovals: approvals,
      store: opened,
      agents: () => [{ agentId: options.agentId, address: options.sidecarAddress, ...(options.sidecarToken ? { token: options.sidecarToken } : {}) }],
      answer: (request) => answerControlRequest({ store: opened, agentId: options.agentId, request, hooks: {} }),
      decideStoredApproval: (approvalId, decision) => opened.approvals.decide(approvalId, decision),
      cancelTurn: (turnId) => {
        const abort = cancels.get(turnId);
        abort?.();
        return abort !== undefined;
      },
    });
    if (!options.flags.tokenFile) await writeTokenFile(controlTokenPath({ dataDir: options.dataDir, kind: 'console', address: server.address }), token);
  } catch (error) {
    await server?.close();
    await store?.close();
    throw error;
  }
  const started = server;
  const tokenFile = options.flags.tokenFile ?? controlTokenPath({ dataDir: options.dataDir, kind: 'console', address: started.address });
  return {
    url: started.url,
    linkWithToken: consoleLinkWithToken(started.url, token),
    tokenFile,
    onEvent: (meta, next) => {
      const record = feed.hook({ ...meta, kind: 'text' }, next);
      return (event) => {
        record(event);
        if (event.type === 'turn-finished') cancels.delete(meta.turnId);
      };
    },
    approverFor: (meta) => approvals.approverFor(meta),
    onCancel: (turnId, abort) => cancels.set(turnId, abort),
    serveUntil: (signal) =>
      new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        signal.addEventListener('abort', () => resolve(), { once: true });
      }),
    async close() {
      approvals.close();
      await started.close();
      if (!options.flags.tokenFile) await removeTokenFile(tokenFile, token);
      await store?.close();
    },
  };
}
