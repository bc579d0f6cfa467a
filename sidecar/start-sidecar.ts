import { createHash } from 'node:crypto';
import { mkdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { createJsonLogger, ToolRuntimeError, type Logger } from '../src/index.js';
import type { Catalogs } from './categories/category.js';
import { defaultCommandEnvAllowList, type SidecarConfig } from './sidecar-config.js';
import { defaultSidecarLimits, type SidecarLimits } from './sidecar-limits.js';
import { createLazyCatalogs } from './lazy-catalogs.js';
import { createSidecarServer, type SidecarTls } from './server.js';
import { checkToolCategories, checkUniqueNames, loadToolModules, withToolCategories, type ToolCategory } from './tool-modules.js';

/** What `startSidecar` takes: one options object, everything but `workspace` optional. */
export interface StartSidecarOptions {
  /** The agent's workspace: an existing directory (made absolute). */
  workspace: string;
  /** The sidecar's own state (default `~/.local/state/tools-runtime/<hash of the workspace>`, as the CLI). */
  stateDir?: string;
  /** `127.0.0.1:0` by default; without `token` only loopback or `unix:/path`. */
  listen?: string;
  /** Your own tool categories, after the built-in ones in this order (see `ToolCategory`). */
  categories?: readonly ToolCategory[];
  /** Modules of categories to import, as `--tools` takes them (paths resolved against `process.cwd()`). */
  toolModules?: readonly string[];
  /** Offer the built-in categories (todo, computer, web, ...). Default true; false serves only yours. */
  builtInCategories?: boolean;
  /** The rest of the sidecar's configuration (web, Brain, skills, command environment ...). */
  config?: Partial<Omit<SidecarConfig, 'workspace' | 'stateDir' | 'limits'>>;
  /** Limits over the defaults the CLI uses. */
  limits?: Partial<SidecarLimits>;
  /** Require `authorization: Bearer <token>` on every RPC. */
  token?: string;
  tls?: SidecarTls;
  /** JSON lines on stderr by default. */
  logger?: Logger;
}

/** A sidecar serving in this process. */
export interface StartedSidecar {
  /** The bound address (`127.0.0.1:PORT` with the real port). */
  address: string;
  /** The configuration it serves with. */
  config: SidecarConfig;
  /**
   * Drains (running calls finish for up to `graceMs`, then are aborted), closes the catalogs'
   * state (the Brain worker), resolves once stopped. Idempotent.
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

/**
 * Starts a sidecar in this process with your own tool categories beside the built-in ones: the
 * embedding counterpart of `tools-runtime-sidecar --tools MODULE`. Your tools get what the built-in
 * ones get: argument repair and validation, the turn's parallel/sequential rule, deadlines and
 * cancellation, presentation events, approvals by the turn's policy.
 *
 * @throws ToolRuntimeError `invalid_definition` for a malformed category; `invalid_request` for a
 *   missing workspace, a module that cannot load (named), two categories of one name, a non-loopback
 *   address without a token; the bind error otherwise.
 */
export async function startSidecar(options: StartSidecarOptions): Promise<StartedSidecar> {
  const workspace = resolve(options.workspace);
  if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) {
    throw new ToolRuntimeError('invalid_request', `startSidecar: the workspace ${workspace} is not an existing directory`);
  }
  // The same default as the CLI's --state-dir (parse-sidecar-args.ts), so both find the same state.
  const stateDir = options.stateDir
    ? resolve(options.stateDir)
    : join(homedir(), '.local', 'state', 'tools-runtime', createHash('sha256').update(workspace).digest('hex').slice(0, 16));
  mkdirSync(stateDir, { recursive: true });
  const config: SidecarConfig = {
    commandEnv: {},
    commandEnvAllowList: [...defaultCommandEnvAllowList],
    ...options.config,
    workspace,
    stateDir,
    limits: { ...defaultSidecarLimits, ...options.limits },
  };
  const logger = options.logger ?? createJsonLogger({ fields: { component: 'sidecar' } });
  const categories = [
    ...checkToolCategories(options.categories ?? [], 'startSidecar({ categories })'),
    ...(await loadToolModules(options.toolModules ?? [], { baseDir: process.cwd() })),
  ];
  checkUniqueNames(categories);

  const builtIn =
    options.builtInCategories === false
      ? undefined
      : createLazyCatalogs({ load: async () => (await import('./tool-sets.js')).createCatalogs, config, logger });
  const catalogs = withToolCategories<Catalogs & { close?(): void | Promise<void> }>(builtIn ?? { text: [], workflowTask: [] }, categories, { logger });
  const server = createSidecarServer({
    catalogs,
    config,
    logger,
    ...(options.token !== undefined ? { token: options.token } : {}),
    ...(options.tls !== undefined ? { tls: options.tls } : {}),
  });
  const address = await server.listen(options.listen ?? '127.0.0.1:0');
  builtIn?.warm();
  let closing: Promise<void> | undefined;
  return {
    address,
    config,
    close(closeOptions) {
      closing ??= server.close(closeOptions).then(() => catalogs.close?.());
      return closing;
    },
  };
}
