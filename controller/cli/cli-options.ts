import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { checkHostPort, parseArgsMessage } from '../../src/cli-usage.js';
import { ToolRuntimeError } from '../../src/errors.js';
import { defaultDataDir } from '../control-plane/store/default-data-dir.js';
import { resolveDatabaseOption } from '../control-plane/store/database-option.js';
import type { ToolSearchMode } from '../loop/collect-provider-tools.js';
import { nativeToolsFor, parseNativeToolsMode } from '../loop/native-tools.js';
import { parseSidecarFeatureFlags, SIDECAR_FEATURE_USAGE, sidecarFeatureFlagOptions, type SidecarFeatureOptions } from './sidecar-feature-flags.js';

/** The controller CLI's settings, after flags and environment. */
export interface CliOptions extends SidecarFeatureOptions {
  help: boolean;
  prompt: string;
  /** A workspace folder to use as is; a temporary copy of the sample workspace when absent. */
  workspace?: string;
  /** `HOST:PORT` of a running sidecar; one is started when absent. */
  sidecar?: string;
  tokenFile?: string;
  /** `--mcp-servers FILE`: MCP servers the started sidecar mounts (docs/mcp.md). */
  mcpServers?: string;
  /** Use the embedded model (no key, no network). */
  embedded: boolean;
  baseURL?: string;
  apiKey?: string;
  model: string;
  /** `--api`: the model server's API, `responses` (default) or `chat` (Chat Completions). */
  api: 'responses' | 'chat';
  stream: boolean;
  toolSearch: ToolSearchMode;
  /** Offer the Responses API's own apply_patch and shell tools (`--native-tools`, resolved for the model). */
  nativeTools: boolean;
  flattenNamespaces: boolean;
  maxModelCalls: number;
  /** The longest `retry-after` the model client honours, in ms. */
  maxRetryAfterMs: number;
  /** The longest silence between chunks of a model response, in ms (0: none). */
  streamIdleTimeoutMs: number;
  eventsFile?: string;
  agentId: string;
  /** The control-plane store's folder (opened when the turn first uses a control-plane tool). */
  dataDir: string;
  /** A PostgreSQL store (`--database`, else `DATABASE_URL`) used instead of the SQLite one in `dataDir`. */
  database?: string;
  quiet: boolean;
  /**
   * Which calls need approval: `never`, `destructive` (the default), `all` (every call that is not
   * read-only). Asked at the terminal; without one, such calls are denied.
   */
  approve: 'never' | 'destructive' | 'all';
  /** `--metrics-listen HOST:PORT`: serve Prometheus metrics there while the turn runs. */
  metricsListen?: string;
  /** `--sandbox MODE`: passed to the sidecar it starts (the sidecar's default when absent). */
  sandbox?: 'off' | 'read-only' | 'workspace-write';
}

/** The default prompt of `npm start`. */
export const DEFAULT_PROMPT = 'Look around this project and tell me what it is and what it contains.';

/** The `--help` text. */
export const USAGE = `Usage: npm start -- [options]

Runs one agent turn: starts a tool sidecar over a workspace, calls the model in a loop and
dispatches its tool calls to the sidecar, prints live progress and the final answer.

Options:
  --prompt TEXT           the user's message (default: "${DEFAULT_PROMPT}")
  --workspace DIR         the sidecar's workspace (default: a temporary copy of controller/sample-workspace)
  --sidecar HOST:PORT     use a running sidecar instead of starting one
  --token-file FILE       bearer token for --sidecar (first line of FILE)
  --mcp-servers FILE      MCP servers whose tools the sidecar mounts (deferred; docs/mcp.md)
  --base-url URL          a Responses API endpoint (default: OPENAI_BASE_URL; with neither a key nor
                          a URL, the embedded scripted model is used)
  --model NAME            the model (default: gpt-5.4; the embedded model ignores it)
  --api API               responses (default) | chat: chat for servers that speak only Chat
                          Completions (llama.cpp's server, LM Studio); same tools, streaming and
                          argument repair, with client tool search and flattened namespaces
  --embedded              use the embedded scripted model even when OPENAI_API_KEY is set
  --stream / --no-stream  stream the model's responses over SSE (default: --stream)
  --tool-search MODE      hosted | client: how deferred tools are found (default: hosted for
                          api.openai.com, client for any other endpoint)
  --native-tools MODE     auto | on | off: offer the Responses API's own apply_patch and shell tools
                          in place of the sidecar's apply_patch and run_command functions (default:
                          auto = on for GPT-5.1 and later and the Codex models at api.openai.com,
                          off for any other model or endpoint); docs/tools.md
  --flatten-namespaces    send namespaced tools as plain functions named namespace__name
  --max-model-calls N     stop after N model calls (default 50)
  --max-retry-after-ms N  honour a 429/5xx retry-after up to N ms (default 60000); a longer one
                          ends the turn with it as the reason
  --stream-idle-timeout-ms N
                          end the turn when the model server sends nothing for N ms once it
                          answered (default 300000; 0: wait forever)
  --events-file FILE      write the turn's events as JSON lines to FILE
  --agent-id ID           the agent the turn belongs to (default: cli-agent)
  --data-dir DIR          the control-plane store for the workflow tools (default:
                          ~/.local/state/tools-runtime/controller; opened only when used)
  --database URL          postgres://... : use that PostgreSQL store instead (default: DATABASE_URL;
                          the same rule as every controller command)
  --approve WHEN          never | destructive | all: which calls must be approved before they run
                          (default: destructive; all = every call that is not read-only). Asked
                          y/N at the terminal; without a terminal such calls are denied, so use
                          --approve never for unattended runs that may change the workspace
  --metrics-listen ADDR   serve Prometheus metrics at http://ADDR/metrics (HOST:PORT) while it runs
  --sandbox MODE          the started sidecar's sandbox for commands: workspace-write (its default),
                          read-only or off (unconfined); see docs/sandbox.md
  --quiet                 print only the final answer
  --help                  this text

${SIDECAR_FEATURE_USAGE}

Environment: OPENAI_API_KEY (the key), OPENAI_BASE_URL (the endpoint), as the openai SDK reads them;
OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_* variables send traces and metrics to a collector.
Exit status: 0 when the turn completed; 1 with a one-line reason otherwise; 2 on bad usage;
3 when the model's answer was cut off (incomplete; the part that came is printed);
4 when the provider reported the response failed or cancelled.`;

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
}

function nonNegativeInteger(text: string | undefined, fallback: number, flag: string): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(value) || value < 0) {
    throw new ToolRuntimeError('invalid_request', `${flag} must be a whole number of milliseconds (0 or more), not "${text}"`);
  }
  return value;
}

/**
 * Parses the CLI flags (and `OPENAI_API_KEY` / `OPENAI_BASE_URL` from `env`).
 *
 * @throws ToolRuntimeError `invalid_request` on an unknown flag or a bad value.
 */
export function parseCliOptions(argv: string[], env: NodeJS.ProcessEnv): CliOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: 'boolean', short: 'h' },
        prompt: { type: 'string' },
        workspace: { type: 'string' },
        sidecar: { type: 'string' },
        'token-file': { type: 'string' },
        'mcp-servers': { type: 'string' },
        'base-url': { type: 'string' },
        model: { type: 'string' },
        api: { type: 'string' },
        embedded: { type: 'boolean' },
        stream: { type: 'boolean' },
        'no-stream': { type: 'boolean' },
        'tool-search': { type: 'string' },
        'native-tools': { type: 'string' },
        'flatten-namespaces': { type: 'boolean' },
        'max-model-calls': { type: 'string' },
        'max-retry-after-ms': { type: 'string' },
        'stream-idle-timeout-ms': { type: 'string' },
        'events-file': { type: 'string' },
        'agent-id': { type: 'string' },
        'data-dir': { type: 'string' },
        database: { type: 'string' },
        quiet: { type: 'boolean' },
        approve: { type: 'string' },
        'metrics-listen': { type: 'string' },
        sandbox: { type: 'string' },
        ...sidecarFeatureFlagOptions,
      },
    }).values;
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', parseArgsMessage(error));
  }
  if (parsed.sidecar !== undefined) checkHostPort(parsed.sidecar, '--sidecar', { unix: true, example: '127.0.0.1:7401' });
  if (parsed['metrics-listen'] !== undefined) checkHostPort(parsed['metrics-listen'], '--metrics-listen', { example: '127.0.0.1:9464' });
  if (parsed.workspace !== undefined && !isDirectory(parsed.workspace)) {
    throw new ToolRuntimeError('invalid_request', `--workspace ${parsed.workspace} is not an existing folder (leave it out for a copy of the sample workspace)`);
  }
  let database: string | undefined;
  try {
    database = resolveDatabaseOption(parsed.database, env);
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', (error as Error).message);
  }
  const apiKey = env.OPENAI_API_KEY || undefined;
  const baseURL = parsed['base-url'] ?? (env.OPENAI_BASE_URL || undefined);
  const embedded = parsed.embedded === true || (!apiKey && !parsed['base-url']);
  const onOpenAI = !embedded && (!baseURL || new URL(baseURL).hostname === 'api.openai.com');
  const api = parsed.api ?? 'responses';
  if (api !== 'responses' && api !== 'chat') throw new ToolRuntimeError('invalid_request', `--api must be "responses" or "chat", not "${api}"`);
  if (api === 'chat' && embedded) throw new ToolRuntimeError('invalid_request', '--api chat needs --base-url URL (or OPENAI_API_KEY): the embedded model speaks the Responses API');
  if (api === 'chat' && parsed['tool-search'] === 'hosted') throw new ToolRuntimeError('invalid_request', '--tool-search hosted is a Responses API feature; with --api chat tool search is the client\'s');
  const toolSearch = parsed['tool-search'] ?? (onOpenAI && api === 'responses' ? 'hosted' : 'client');
  if (toolSearch !== 'hosted' && toolSearch !== 'client') {
    throw new ToolRuntimeError('invalid_request', `--tool-search must be "hosted" or "client", not "${toolSearch}"`);
  }
  let nativeTools: boolean;
  try {
    const mode = parseNativeToolsMode(parsed['native-tools'] ?? 'auto');
    // Chat Completions has no tools of the provider's own: there, apply_patch is a function.
    if (api === 'chat' && mode === 'on') throw new Error('the provider\'s own apply_patch and shell are Responses API tools; with --api chat they are functions');
    nativeTools = api === 'responses' && nativeToolsFor(mode, { name: parsed.model ?? 'gpt-5.4', ...(embedded ? { baseURL: 'embedded' } : baseURL ? { baseURL } : {}) });
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', `--native-tools: ${(error as Error).message}`);
  }
  const maxModelCalls = Number(parsed['max-model-calls'] ?? 50);
  if (!Number.isInteger(maxModelCalls) || maxModelCalls < 1) {
    throw new ToolRuntimeError('invalid_request', `--max-model-calls must be a positive integer, not "${parsed['max-model-calls']}"`);
  }
  const maxRetryAfterMs = nonNegativeInteger(parsed['max-retry-after-ms'], 60_000, '--max-retry-after-ms');
  const streamIdleTimeoutMs = nonNegativeInteger(parsed['stream-idle-timeout-ms'], 300_000, '--stream-idle-timeout-ms');
  const approve = parsed.approve ?? 'destructive';
  if (approve !== 'never' && approve !== 'destructive' && approve !== 'all') {
    throw new ToolRuntimeError('invalid_request', `--approve must be "never", "destructive" or "all", not "${approve}"`);
  }
  const sandbox = parsed.sandbox;
  if (sandbox !== undefined && sandbox !== 'off' && sandbox !== 'read-only' && sandbox !== 'workspace-write') {
    throw new ToolRuntimeError('invalid_request', `--sandbox must be "off", "read-only" or "workspace-write", not "${sandbox}"`);
  }
  if (sandbox !== undefined && parsed.sidecar) throw new ToolRuntimeError('invalid_request', '--sandbox is for the sidecar the CLI starts; a running --sidecar has its own');
  if (parsed['token-file'] && !parsed.sidecar) throw new ToolRuntimeError('invalid_request', '--token-file goes with --sidecar');
  if (parsed.sidecar && parsed.workspace) throw new ToolRuntimeError('invalid_request', '--workspace starts a sidecar; it cannot be used with --sidecar');
  if (parsed.sidecar && parsed['mcp-servers']) throw new ToolRuntimeError('invalid_request', '--mcp-servers goes to a sidecar this command starts; give it to the --sidecar one yourself');
  const featureOptions = parseSidecarFeatureFlags(parsed, { runningSidecar: parsed.sidecar !== undefined });
  if (parsed.stream && parsed['no-stream']) throw new ToolRuntimeError('invalid_request', 'choose one of --stream and --no-stream');
  return {
    ...featureOptions,
    help: parsed.help === true,
    prompt: parsed.prompt ?? DEFAULT_PROMPT,
    ...(parsed.workspace ? { workspace: parsed.workspace } : {}),
    ...(sandbox ? { sandbox } : {}),
    ...(parsed.sidecar ? { sidecar: parsed.sidecar } : {}),
    ...(parsed['token-file'] ? { tokenFile: parsed['token-file'] } : {}),
    ...(parsed['mcp-servers'] ? { mcpServers: parsed['mcp-servers'] } : {}),
    embedded,
    ...(baseURL && !embedded ? { baseURL } : {}),
    ...(apiKey ? { apiKey } : {}),
    model: parsed.model ?? 'gpt-5.4',
    api,
    stream: parsed['no-stream'] !== true,
    toolSearch,
    nativeTools,
    // Chat Completions has no namespaces: their tools go as namespace__name.
    flattenNamespaces: parsed['flatten-namespaces'] === true || api === 'chat',
    maxModelCalls,
    maxRetryAfterMs,
    streamIdleTimeoutMs,
    ...(parsed['events-file'] ? { eventsFile: parsed['events-file'] } : {}),
    agentId: parsed['agent-id'] ?? 'cli-agent',
    dataDir: parsed['data-dir'] ?? defaultDataDir(),
    ...(database ? { database } : {}),
    quiet: parsed.quiet === true,
    approve,
    ...(parsed['metrics-listen'] !== undefined ? { metricsListen: parsed['metrics-listen'] } : {}),
  };
}
