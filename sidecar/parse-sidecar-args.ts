import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { errorMessage, ToolRuntimeError } from '../src/errors.js';
import type { LogLevel } from '../src/logger.js';
import type { BrainLimits } from './categories/brain/brain-protocol.js';
import { defaultCommandEnvAllowList, type SidecarConfig } from './sidecar-config.js';
import { defaultSidecarLimits, type SidecarLimits } from './sidecar-limits.js';
import { parseLimitSettings } from './categories/computer/sandbox/limits/limit-settings.js';
import { defaultSandboxSettings, parseNetworkPolicy, parseSandboxMode, type SandboxSettings } from './categories/computer/sandbox/sandbox-policy.js';
import { isLoopbackAddress } from '../src/grpc-server/listen-address.js';
import { localServersDir } from '../src/local-servers.js';
import { checkHostPort, parseArgsMessage } from '../src/cli-usage.js';
import { parseAllowEntry } from './categories/computer/sandbox/allow-entry.js';
import type { McpServerSpec } from './categories/mcp/mcp-servers-file.js';
import { mcpFlags, parseMcpFlags, type McpCliOptions } from './mcp/parse-mcp-flags.js';
import type { SidecarTls } from './server.js';

/** What the sidecar's flags say. */
export interface SidecarCliOptions {
  listen: string;
  logLevel: LogLevel;
  /**
   * The bearer token, read from `--token-file` (trimmed). Absent: the CLI generates one at start
   * and writes it 0600 to the runtime folder (src/local-servers.ts), so a sidecar always needs one.
   */
  token?: string;
  /** `--token-file`, absolute, when given. */
  tokenFile?: string;
  tls?: SidecarTls;
  config: SidecarConfig;
  /** `--metrics-listen HOST:PORT`: serve Prometheus metrics there. */
  metricsListen?: string;
  /** `--exit-on-stdin-eof`: shut down when stdin reaches EOF (the spawner's lifeline). */
  exitOnStdinEof: boolean;
  /** `--tools MODULE` (repeatable): modules of users' own tool categories, in order (tool-modules.ts). */
  toolModules: string[];
  /** `--mcp stdio` / `--mcp-listen ADDR`: serve the tools over MCP too (mcp/parse-mcp-flags.ts). */
  mcp?: McpCliOptions;
}

/** A usage error: the CLI prints it and exits 2. */
export class SidecarUsageError extends ToolRuntimeError {
  constructor(message: string) {
    super('invalid_request', message);
  }
}

const flags = {
  listen: { type: 'string' },
  workspace: { type: 'string' },
  'state-dir': { type: 'string' },
  'token-file': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-client-ca': { type: 'string' },
  'log-level': { type: 'string' },
  'max-message-bytes': { type: 'string' },
  'max-arguments-bytes': { type: 'string' },
  'max-result-chars': { type: 'string' },
  'call-deadline-ms': { type: 'string' },
  'max-call-deadline-ms': { type: 'string' },
  'max-concurrent-calls': { type: 'string' },
  'abort-grace-ms': { type: 'string' },
  'drain-grace-ms': { type: 'string' },
  'max-queued-events': { type: 'string' },
  'max-client-requests-per-call': { type: 'string' },
  'max-pending-client-requests': { type: 'string' },
  'max-client-message-bytes': { type: 'string' },
  'exit-on-stdin-eof': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  env: { type: 'string', multiple: true },
  'env-allow': { type: 'string', multiple: true },
  'web-fetch': { type: 'boolean' },
  'web-allow-private': { type: 'boolean' },
  'web-search-provider': { type: 'string' },
  'web-search-url': { type: 'string' },
  'web-search-key-file': { type: 'string' },
  brain: { type: 'string' },
  'brain-max-pages': { type: 'string' },
  'brain-max-page-bytes': { type: 'string' },
  'brain-max-total-bytes': { type: 'string' },
  skills: { type: 'string' },
  'metrics-listen': { type: 'string' },
  sandbox: { type: 'string' },
  network: { type: 'string' },
  hide: { type: 'string', multiple: true },
  'allow-unsandboxed': { type: 'boolean' },
  limits: { type: 'string' },
  tools: { type: 'string', multiple: true },
  ...mcpFlags,
} as const;

const limitFlags: Array<[keyof typeof flags, keyof SidecarLimits]> = [
  ['max-message-bytes', 'maxMessageBytes'],
  ['max-arguments-bytes', 'maxArgumentsBytes'],
  ['max-result-chars', 'maxResultTextChars'],
  ['call-deadline-ms', 'defaultCallDeadlineMs'],
  ['max-call-deadline-ms', 'maxCallDeadlineMs'],
  ['max-concurrent-calls', 'maxConcurrentCallsPerTurn'],
  ['abort-grace-ms', 'abortGraceMs'],
  ['drain-grace-ms', 'drainGraceMs'],
  ['max-queued-events', 'maxQueuedEvents'],
  ['max-client-requests-per-call', 'maxClientRequestsPerCall'],
  ['max-pending-client-requests', 'maxPendingClientRequestsPerTurn'],
  ['max-client-message-bytes', 'maxClientMessageBytes'],
];

const brainLimitFlags: Array<[keyof typeof flags, keyof BrainLimits]> = [
  ['brain-max-pages', 'maxPages'],
  ['brain-max-page-bytes', 'maxPageBytes'],
  ['brain-max-total-bytes', 'maxTotalBytes'],
];

const readText = (flag: string, path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new SidecarUsageError(`--${flag}: cannot read ${path}: ${errorMessage(error)}`);
  }
};
const existingDir = (flag: string, path: string) => {
  const absolute = resolve(path);
  let isDir = false;
  try {
    isDir = statSync(absolute).isDirectory();
  } catch {
    // reported below
  }
  if (!isDir) throw new SidecarUsageError(`--${flag}: ${absolute} is not an existing directory`);
  return absolute;
};

/**
 * Parses the sidecar's flags (node:util parseArgs) into its options: checks the workspace exists
 * and resolves it absolute, reads the token, TLS and key files, fills the defaults.
 * Does not create the state directory.
 *
 * @throws SidecarUsageError on an unknown flag, a missing `--workspace`, a bad number or value, an
 *   unreadable file.
 */
/**
 * `parseSidecarArgs` for the CLI: loads the `--mcp-servers` reader (and zod with it) only when the
 * flag is there.
 *
 * @throws SidecarUsageError for a bad flag or file.
 */
export async function loadSidecarArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<SidecarCliOptions> {
  const named = argv.some((arg) => arg === '--mcp-servers' || arg.startsWith('--mcp-servers='));
  const files = named ? { readMcpServersFile: (await import('./categories/mcp/mcp-servers-file.js')).readMcpServersFile } : {};
  return parseSidecarArgs(argv, env, files);
}

/**
 * Parses the sidecar's flags, reading the files they name. `--mcp-servers` is read with
 * `files.readMcpServersFile` (its validation holds zod, which a sidecar without the flag does not
 * load: `loadSidecarArgs` passes it only then).
 *
 * @throws SidecarUsageError for a bad flag or file.
 */
export function parseSidecarArgs(argv: string[], env: NodeJS.ProcessEnv = process.env, files: { readMcpServersFile?: (path: string) => McpServerSpec[] } = {}): SidecarCliOptions {
  let values: { [K in keyof typeof flags]?: (typeof flags)[K] extends { multiple: true } ? string[] : (typeof flags)[K]['type'] extends 'boolean' ? boolean : string };
  try {
    values = parseArgs({ args: argv, options: flags, strict: true, allowPositionals: false }).values as typeof values;
  } catch (error) {
    throw new SidecarUsageError(`${parseArgsMessage(error)} (npm run sidecar -- --help lists the options)`);
  }
  if (!values.workspace) throw new SidecarUsageError('--workspace DIR is required (the agent workspace the tools work in)');
  const workspace = existingDir('workspace', values.workspace);
  const stateDir = values['state-dir']
    ? resolve(values['state-dir'])
    : join(homedir(), '.local', 'state', 'tools-runtime', createHash('sha256').update(workspace).digest('hex').slice(0, 16));

  const limits: SidecarLimits = { ...defaultSidecarLimits };
  for (const [flag, key] of limitFlags) {
    const text = values[flag] as string | undefined;
    if (text === undefined) continue;
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value <= 0) {
      throw new SidecarUsageError(`--${flag}: expected a positive integer, got ${JSON.stringify(text)}`);
    }
    limits[key] = value;
  }
  if (limits.defaultCallDeadlineMs > limits.maxCallDeadlineMs) limits.maxCallDeadlineMs = limits.defaultCallDeadlineMs;
  // A request or reply larger than a gRPC message could never cross the stream. Only an explicit
  // value is refused: a small --max-message-bytes alone keeps working as it did.
  if (values['max-client-message-bytes'] !== undefined && limits.maxClientMessageBytes > limits.maxMessageBytes) {
    throw new SidecarUsageError(
      `--max-client-message-bytes: ${limits.maxClientMessageBytes} is over the gRPC message limit of ${limits.maxMessageBytes} (--max-message-bytes)`,
    );
  }

  const logLevel = (values['log-level'] ?? 'info') as LogLevel;
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) {
    throw new SidecarUsageError(`--log-level: expected debug, info, warn or error, got ${JSON.stringify(logLevel)}`);
  }

  const commandEnv: Record<string, string> = {};
  for (const pair of values.env ?? []) {
    const equals = pair.indexOf('=');
    if (equals <= 0) throw new SidecarUsageError(`--env: expected KEY=VALUE, got ${JSON.stringify(pair)}`);
    commandEnv[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  const commandEnvAllowList = [...new Set([...defaultCommandEnvAllowList, ...(values['env-allow'] ?? [])])];

  const allowPrivateNetwork = values['web-allow-private'] === true;
  const config: SidecarConfig = { workspace, stateDir, commandEnv, commandEnvAllowList, limits };
  if (values['web-fetch']) {
    config.webFetch = { allowPrivateNetwork, maxRedirects: 5, maxBytes: 5 * 1024 * 1024, timeoutMs: 30_000, userAgent: 'tools-runtime/0.1' };
  }
  const provider = values['web-search-provider'];
  if (provider !== undefined) {
    if (provider !== 'searxng' && provider !== 'brave') {
      throw new SidecarUsageError(`--web-search-provider: expected searxng or brave, got ${JSON.stringify(provider)}`);
    }
    const url = values['web-search-url'] ?? (provider === 'brave' ? 'https://api.search.brave.com/res/v1/web/search' : '');
    if (!url) throw new SidecarUsageError('--web-search-provider searxng needs --web-search-url URL (the instance base URL)');
    try {
      new URL(url);
    } catch {
      throw new SidecarUsageError(`--web-search-url: not a URL: ${JSON.stringify(url)}`);
    }
    const keyFile = values['web-search-key-file'];
    const apiKey = keyFile ? readText('web-search-key-file', keyFile).trim() : env.BRAVE_API_KEY;
    if (provider === 'brave' && !apiKey) throw new SidecarUsageError('--web-search-provider brave needs --web-search-key-file F or BRAVE_API_KEY');
    config.webSearch = { provider, url, apiKey: apiKey || undefined, timeoutMs: 15_000, maxResults: 10, allowPrivateNetwork };
  } else if (values['web-search-url'] || values['web-search-key-file']) {
    throw new SidecarUsageError('--web-search-url and --web-search-key-file need --web-search-provider searxng|brave');
  }
  if (values.brain) config.brainDir = existingDir('brain', values.brain);
  for (const [flag, key] of brainLimitFlags) {
    const text = values[flag] as string | undefined;
    if (text === undefined) continue;
    if (!values.brain) throw new SidecarUsageError(`--${flag} needs --brain DIR`);
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value <= 0) {
      throw new SidecarUsageError(`--${flag}: expected a positive integer, got ${JSON.stringify(text)}`);
    }
    config.brainLimits = { ...config.brainLimits, [key]: value };
  }
  if (values.skills) config.skillsDir = existingDir('skills', values.skills);
  if (values['mcp-servers']) {
    try {
      if (!files.readMcpServersFile) throw new Error('no reader for --mcp-servers was given (use loadSidecarArgs)');
      config.mcpServers = files.readMcpServersFile(values['mcp-servers']);
    } catch (error) {
      throw new SidecarUsageError(errorMessage(error));
    }
  }

  let token: string | undefined;
  if (values['token-file']) {
    token = readText('token-file', values['token-file']).trim();
    if (!token) throw new SidecarUsageError(`--token-file: ${values['token-file']} is empty`);
  }
  let tls: SidecarTls | undefined;
  if (values['tls-cert'] || values['tls-key'] || values['tls-client-ca']) {
    if (!values['tls-cert'] || !values['tls-key']) throw new SidecarUsageError('TLS needs both --tls-cert and --tls-key');
    tls = {
      cert: Buffer.from(readText('tls-cert', values['tls-cert'])),
      key: Buffer.from(readText('tls-key', values['tls-key'])),
      clientCa: values['tls-client-ca'] ? Buffer.from(readText('tls-client-ca', values['tls-client-ca'])) : undefined,
    };
  }
  config.sandbox = sandboxSettings(values, config, env);
  if (values.limits !== undefined) {
    try {
      config.processLimits = parseLimitSettings(values.limits);
    } catch (error) {
      throw new SidecarUsageError(`--limits: ${errorMessage(error)}`);
    }
  }

  const listen = values.listen ?? '127.0.0.1:0';
  try {
    checkHostPort(listen, '--listen', { unix: true, example: '127.0.0.1:7401' });
    if (values['metrics-listen'] !== undefined) checkHostPort(values['metrics-listen'], '--metrics-listen', { example: '127.0.0.1:9464' });
  } catch (error) {
    throw new SidecarUsageError(errorMessage(error));
  }
  if (!token && !isLoopbackAddress(listen)) {
    throw new SidecarUsageError(
      `refusing to listen on ${listen} without --token-file: use a loopback address (127.0.0.1, ::1, localhost) or unix:/path, or give a token`,
    );
  }
  return {
    listen,
    logLevel,
    token,
    ...(values['token-file'] ? { tokenFile: resolve(values['token-file']) } : {}),
    tls,
    config,
    exitOnStdinEof: values['exit-on-stdin-eof'] === true,
    toolModules: values.tools ?? [],
    ...withMcp(parseMcpFlags(values, { hasToken: token !== undefined, usageError: (message) => new SidecarUsageError(message) })),
    ...(values['metrics-listen'] !== undefined ? { metricsListen: values['metrics-listen'] } : {}),
  };
}

const withMcp = (mcp: McpCliOptions | undefined) => (mcp ? { mcp } : {});
/** The MCP servers' header files (tokens): hidden like the sidecar's other secrets. */
const mcpSecretFiles = (config: SidecarConfig) => (config.mcpServers ?? []).flatMap((server) => (server.transport === 'http' ? (server.secretFiles ?? []) : []));

/**
 * `--sandbox`, `--network`, `--hide` and `--allow-unsandboxed` as settings. The sidecar hides, on
 * its own, every path it was given a secret or state in: the state folder, the token file, the TLS
 * key, the web search key file. The state folder's `mcporter` folder stays readable (skills tell
 * the model to run the wrapper and configuration written there).
 */
function sandboxSettings(
  values: { sandbox?: string; network?: string; hide?: string[]; 'allow-unsandboxed'?: boolean; 'token-file'?: string; 'tls-key'?: string; 'web-search-key-file'?: string; 'mcp-servers'?: string; listen?: string; 'mcp-listen'?: string },
  config: SidecarConfig,
  env: NodeJS.ProcessEnv,
): SandboxSettings {
  const settings = defaultSandboxSettings();
  try {
    if (values.sandbox !== undefined) settings.mode = parseSandboxMode(values.sandbox);
  } catch (error) {
    throw new SidecarUsageError(`--sandbox: ${errorMessage(error)}`);
  }
  if (values.network !== undefined) {
    if (settings.mode === 'off' && values.network !== 'on') {
      throw new SidecarUsageError(`--network ${values.network} needs a sandbox to enforce it: with --sandbox off commands reach every network (drop --network, or choose --sandbox workspace-write)`);
    }
    try {
      settings.network = parseNetworkPolicy(values.network);
      // Each entry's port is checked here, at start, not at the first command (network-proxy.ts).
      if (settings.network.mode === 'allow') for (const host of settings.network.hosts) parseAllowEntry(host);
    } catch (error) {
      throw new SidecarUsageError(`--network: ${errorMessage(error)}`);
    }
  } else if (settings.mode === 'off') {
    settings.network = { mode: 'on' };
  }
  for (const given of values.hide ?? []) {
    if (given.trim() === '') throw new SidecarUsageError('--hide: expected a path, got an empty string');
    if (resolve(given) === '/') throw new SidecarUsageError('--hide /: hiding the whole file system leaves nothing to run');
  }
  // The sidecar's own doors too: the runtime folder (every local server's generated token and
  // address), and a unix socket it listens on (gRPC or MCP), so a command cannot connect to the
  // sidecar that runs it (issue 32, item 3).
  const sockets = [values.listen, values['mcp-listen']].filter((address): address is string => address?.startsWith('unix:') === true).map((address) => address.slice('unix:'.length));
  const own = [config.stateDir, values['token-file'], values['tls-key'], values['web-search-key-file'], values['mcp-servers'], ...mcpSecretFiles(config), localServersDir(env), ...sockets].filter((file): file is string => file !== undefined);
  settings.hide = [...new Set([...own, ...(values.hide ?? [])].map((file) => resolve(file)))];
  settings.readable = [join(config.stateDir, 'mcporter')];
  settings.allowUnsandboxed = values['allow-unsandboxed'] === true;
  return settings;
}

/** Whether `argv` asks for `--help` (or `-h`), whatever else it holds. */
export function sidecarHelpRequested(argv: string[]): boolean {
  try {
    return parseArgs({ args: argv, options: flags, strict: false, allowPositionals: true }).values.help === true;
  } catch {
    return false;
  }
}
