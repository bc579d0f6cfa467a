import * as grpc from '@grpc/grpc-js';
import { errorMessage, ToolRuntimeError } from '../src/errors.js';
import type { Logger } from '../src/logger.js';
import type { Catalogs } from './categories/category.js';
import type { SidecarConfig } from './sidecar-config.js';
import { createTokenInterceptor } from '../src/grpc-server/auth-interceptor.js';
import { createToolSidecarServiceDefinition } from './grpc/encode-turn-response.js';
import { createSidecarHealth } from '../src/grpc-server/health-service.js';
import { addLazyReflection } from '../src/grpc-server/lazy-reflection.js';
import { bindFailureMessage } from '../src/cli-usage.js';
import { boundAddress, isLoopbackAddress } from '../src/grpc-server/listen-address.js';
import { createSidecarService } from './grpc/sidecar-service.js';
import { mcpServerHealthName, watchMcpServerStatus } from './categories/mcp/mcp-server-status.js';
import type { SidecarTelemetry } from './telemetry/sidecar-telemetry.js';

const SERVICE_NAME = 'toolruntime.v1.ToolSidecarService';
/**
 * The health service's name for the sandbox: SERVING once bubblewrap was found working,
 * NOT_SERVING while probing and when it cannot be had (process tools then refuse every call);
 * unknown (NOT_FOUND) under `--sandbox off`. The server itself ('') stays SERVING: its other tools work.
 */
export const SANDBOX_HEALTH_SERVICE = 'toolruntime.v1.Sandbox';

/** TLS material, PEM encoded. With `clientCa`, clients must present a certificate it signed. */
export interface SidecarTls {
  cert: Buffer;
  key: Buffer;
  clientCa?: Buffer;
}

/** A sidecar gRPC server: ToolSidecarService, grpc.health.v1 and server reflection. */
export interface SidecarServer {
  /**
   * Binds `address` (`127.0.0.1:0`, `[::1]:PORT`, `localhost:PORT`, `unix:/path`) and serves.
   * Resolves the real bound address (the real port for `:0`).
   *
   * @throws ToolRuntimeError `invalid_request` for a non-loopback address without a token, or when
   *   already listening; the bind error otherwise.
   */
  listen(address: string): Promise<string>;
  /**
   * Drains: refuses new RPCs, lets running calls finish for up to `graceMs` (default
   * `limits.drainGraceMs`), then aborts what still runs (results still sent, bounded by
   * `limits.abortGraceMs`) and ends every stream with UNAVAILABLE.
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

/**
 * Creates the sidecar server for embedding from Node (the CLI uses it too). With `token`, every
 * RPC must carry `authorization: Bearer <token>`; with `tls`, it serves TLS (mutual with a client CA).
 * With `telemetry` (from `startSidecarTelemetry`), turns and calls are traced and measured.
 */
export function createSidecarServer(options: {
  catalogs: Catalogs;
  config: SidecarConfig;
  logger: Logger;
  token?: string;
  tls?: SidecarTls;
  telemetry?: SidecarTelemetry;
}): SidecarServer {
  const { config, logger } = options;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': config.limits.maxMessageBytes,
    'grpc.max_send_message_length': config.limits.maxMessageBytes,
    interceptors: options.token ? [createTokenInterceptor(options.token)] : [],
  });
  const service = createSidecarService({ catalogs: options.catalogs, config, logger, ...(options.telemetry ? { telemetry: options.telemetry } : {}) });
  server.addService(createToolSidecarServiceDefinition({ maxMessageBytes: config.limits.maxMessageBytes }), service.implementation);
  const health = createSidecarHealth({ '': 'SERVING', [SERVICE_NAME]: 'SERVING' });
  health.addToServer(server);
  // Loaded on the first reflection request: most sidecars never get one.
  addLazyReflection(server, { services: [SERVICE_NAME, 'grpc.health.v1.Health'] });

  const credentials = options.tls
    ? grpc.ServerCredentials.createSsl(options.tls.clientCa ?? null, [{ cert_chain: options.tls.cert, private_key: options.tls.key }], options.tls.clientCa !== undefined)
    : grpc.ServerCredentials.createInsecure();
  let listening = false;
  let closing: Promise<void> | undefined;
  let stopWatchingProbe = () => {};
  let stopWatchingMcp = () => {};

  return {
    async listen(address) {
      if (listening) throw new ToolRuntimeError('invalid_request', 'the sidecar server is already listening');
      if (!options.token && !isLoopbackAddress(address)) {
        throw new ToolRuntimeError(
          'invalid_request',
          `refusing to listen on ${address} without a token: use a loopback address (127.0.0.1, ::1, localhost) or a unix socket, or give a token`,
        );
      }
      listening = true;
      const port = await new Promise<number>((resolve, reject) => {
        server.bindAsync(address, credentials, (error, boundPort) => (error ? reject(error) : resolve(boundPort)));
      }).catch(async (error: unknown) => {
        listening = false;
        throw new Error(await bindFailureMessage(address, '--listen', error), { cause: error });
      });
      const real = boundAddress(address, port);
      if ((config.sandbox?.mode ?? 'workspace-write') !== 'off') {
        health.setStatus(SANDBOX_HEALTH_SERVICE, 'NOT_SERVING');
        // The sandbox's modules load now that the server listens, off the start-up path. A failed
        // probe is retried with backoff (sandbox-probe.ts): health follows each answer.
        void Promise.all([import('./sandbox-report.js'), import('./categories/computer/sandbox/sandbox-probe.js')]).then(
          ([{ sandboxReport }, { sandboxProber }]) => {
            if (closing) return;
            stopWatchingProbe = sandboxProber().onChange((probe) => {
              if (!closing) health.setStatus(SANDBOX_HEALTH_SERVICE, probe.ok ? 'SERVING' : 'NOT_SERVING');
            });
            void sandboxReport(config).then((report) => {
              if (report.ok && !closing) health.setStatus(SANDBOX_HEALTH_SERVICE, 'SERVING');
            });
          },
          (error: unknown) => logger.error('the sandbox could not be checked: it stays NOT_SERVING', { error: errorMessage(error) }),
        );
      }
      // A mounted MCP server that is down shows in health (NOT_SERVING under its own name), not only
      // as tools missing from the next turn.
      stopWatchingMcp = watchMcpServerStatus((status) => {
        if (!closing) health.setStatus(mcpServerHealthName(status.name), status.up ? 'SERVING' : 'NOT_SERVING');
      });
      logger.info('sidecar listening', { address: real, tls: options.tls !== undefined, auth: options.token !== undefined });
      return real;
    },
    close(closeOptions = {}) {
      closing ??= drain(closeOptions.graceMs ?? config.limits.drainGraceMs);
      return closing;
    },
  };

  async function drain(graceMs: number): Promise<void> {
    stopWatchingProbe();
    stopWatchingMcp();
    health.setStatus('', 'NOT_SERVING');
    health.setStatus(SERVICE_NAME, 'NOT_SERVING');
    if ((config.sandbox?.mode ?? 'workspace-write') !== 'off') health.setStatus(SANDBOX_HEALTH_SERVICE, 'NOT_SERVING');
    const shutdown = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    const graceEnds = Date.now() + graceMs;
    // Wait (bounded) for running calls to finish on their own.
    while (Date.now() < graceEnds && [...service.turns].some((turn) => turn.activeCalls > 0)) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const reason = 'the sidecar is shutting down';
    const ended = Promise.all([...service.turns].map((turn) => turn.shutdown(reason)));
    const bound = config.limits.abortGraceMs + 1_000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise((resolve) => (timer = setTimeout(resolve, bound)))]);
    clearTimeout(timer);
    await Promise.race([shutdown, new Promise((resolve) => (timer = setTimeout(resolve, 1_000)))]);
    clearTimeout(timer);
    server.forceShutdown();
    logger.info('sidecar closed');
  }
}
