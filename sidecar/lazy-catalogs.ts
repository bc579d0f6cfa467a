import { errorMessage, ToolRuntimeError } from '../src/errors.js';
import type { Logger } from '../src/logger.js';
import { assembleToolSet, type Catalogs, type CategoryCreator } from './categories/category.js';
import type { SidecarConfig } from './sidecar-config.js';

/** Catalogs with the sidecar-lifetime state they hold, as `createCatalogs` (tool-sets.ts) makes them. */
export type ClosableCatalogs = Catalogs & { close?(): void | Promise<void> };

/**
 * Catalogs whose module loads after the sidecar listens: `load()` (the tool categories, their
 * schemas, zod, picomatch, child_process, https, worker_threads ...) is not on the path to the
 * listening line. Call `warm()` once the server listens: it starts the load (and with it what
 * `create` starts at once, such as the Brain index) without waiting for a turn, or, with
 * `warm: 'when-something-starts'`, only when something must start at once. A turn that opens
 * earlier waits for it; a failed load fails that turn's assembly (and the next one tries again).
 * After `close()` nothing more is made.
 *
 * Each catalog is one creator that runs the real catalog in order, so a turn's tools and
 * instructions are exactly the real catalogs'.
 */
export function createLazyCatalogs<T extends ClosableCatalogs>(options: {
  load: () => Promise<(config: SidecarConfig, options: { logger: Logger }) => T>;
  config: SidecarConfig;
  logger: Logger;
  /**
   * What `warm()` does: `always` loads; `when-something-starts` loads only when the catalogs hold
   * something that must start with the sidecar (see `catalogsStartAtOnce`), and otherwise leaves
   * the load to the first turn, so an idle sidecar holds neither the categories nor zod. Default `always`.
   */
  warm?: 'always' | 'when-something-starts';
}): ClosableCatalogs & { warm(): void } {
  let real: Promise<T> | undefined;
  let made: T | undefined;
  let closed = false;
  const catalogs = () => {
    real ??= options.load().then(
      (create) => {
        // Closed while the module loaded: make nothing that would need closing (the Brain worker).
        if (closed) throw new ToolRuntimeError('sidecar_unavailable', 'the sidecar is closing: its tool catalogs were not made');
        made = create(options.config, { logger: options.logger });
        return made;
      },
      (error: unknown) => {
        real = undefined;
        throw error;
      },
    );
    return real;
  };
  // assembleToolSet picks the real catalog of the turn's kind. The wait for the load ends with the
  // turn's signal (the load itself goes on, for the next turn).
  const runReal: CategoryCreator = async (context) => assembleToolSet(await untilAborted(catalogs(), context.signal), context);
  return {
    text: [runReal],
    workflowTask: [runReal],
    warm() {
      if (options.warm === 'when-something-starts' && !catalogsStartAtOnce(options.config)) return;
      catalogs().catch((error: unknown) => {
        if (!closed) options.logger.error('loading the tool catalogs failed', { error: errorMessage(error) });
      });
    },
    async close() {
      // Not waiting for a load in flight: nothing is made after this, and a module still loading
      // holds nothing to release (a sidecar stopped right after it listens exits at once).
      closed = true;
      await made?.close?.();
    },
  };
}

/**
 * Whether the catalogs hold something that must start with the sidecar rather than with its first
 * turn: the Brain index (`--brain`, built in the background from start-up) and mounted MCP servers
 * (`--mcp-servers`, connected before a turn needs their tools).
 */
export function catalogsStartAtOnce(config: SidecarConfig): boolean {
  return config.brainDir !== undefined || (config.mcpServers?.length ?? 0) > 0;
}

/** `promise`, or a rejection with ToolRuntimeError `aborted` as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new ToolRuntimeError('aborted', 'the turn ended while its tools were loading'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new ToolRuntimeError('aborted', 'the turn ended while its tools were loading'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
