import { parseCliOptions, type CliOptions } from '../../../cli/cli-options.js';
import { checkHostPort } from '../../../../src/cli-usage.js';
import { ToolRuntimeError } from '../../../../src/index.js';
import { defaultDataDir } from '../../store/default-data-dir.js';
import { resolveDatabaseOption } from '../../store/open-control-plane-store.js';
import { AGENTS_FILE_KEYS } from './read-agents-file.js';

/** The settings of `controller serve`. */
export interface ServeOptions {
  help: boolean;
  listen: string;
  dataDir: string;
  /** A PostgreSQL URL shared by several controllers (`--database`, else DATABASE_URL); absent: SQLite in dataDir. */
  database?: string;
  /** With `database`: how long a claim on a job turn or a task attempt lives before another controller may run it (s). */
  claimExpirySeconds: number;
  agentsFile: string;
  /** The bearer token ControlPlaneService requires (first line of the file); absent: generated at start. */
  tokenFile?: string;
  /** On SIGTERM, how long running turns may finish before they are aborted (ms). */
  graceMs: number;
  /** Background jobs of one agent running at once. */
  maxRunningJobsPerAgent: number;
  /** The longest one job's (or scheduled) turn may run (ms). */
  jobTimeoutMs: number;
  /** Workflow task turns this controller runs at once, over all runs. */
  maxRunningTasks: number;
  /** The longest one workflow task turn may run before its attempt fails (ms; with PostgreSQL, also under the claim expiry). */
  taskTimeoutMs: number;
  /** Which calls of job and scheduled turns wait for an operator's approval (`approvals` command). */
  approve: 'never' | 'destructive' | 'all';
  /** How long a stored approval waits before it expires as denied (ms). */
  approvalTimeoutMs: number;
  /** The model settings, as `npm start` reads them (only its model flags are accepted). */
  model: Pick<CliOptions, 'embedded' | 'baseURL' | 'apiKey' | 'model' | 'api' | 'stream' | 'toolSearch' | 'flattenNamespaces' | 'maxModelCalls'>;
}

/** The `serve --help` text. */
export const SERVE_USAGE = `Usage: npm run controller -- serve --agents FILE [options]

Runs the control plane as a service: the scheduler, the background job runner and the workflow
runner, and ControlPlaneService (with gRPC health and reflection) on --listen.

Options:
  --listen ADDR              where to serve (default 127.0.0.1:7400; unix:PATH for a socket only this user can open)
  --data-dir DIR             the store's folder (default ~/.local/state/tools-runtime/controller)
  --database URL             postgres://... : a PostgreSQL store shared with other controllers (default DATABASE_URL; neither: SQLite in --data-dir)
  --claim-expiry-s N         a claim on a job turn or workflow task attempt lasts N s unrenewed (default 60): its controller
                             renews it while the turn runs, and one that died has its work run elsewhere after N s
  --agents FILE              JSON: {"AGENT_ID": ENTRY, ...}, each ENTRY one of the forms below
  --token-file FILE          the token every RPC needs ("authorization: Bearer <first line of FILE>"); without it a
                             token is generated at start and written 0600 to DATA_DIR/tokens/control-plane-ADDR.token,
                             where \`approvals\` finds it (removed at exit)
  --grace-ms N               on SIGTERM, let running turns finish for N ms before aborting them (default 10000)
  --max-running-jobs N       background jobs of one agent running at once (default 2)
  --job-timeout-ms N         abort a job's (or scheduled) turn that runs longer, failing the job (default 1800000)
  --max-running-tasks N      workflow task turns this controller runs at once, over all runs (default 16)
  --task-timeout-ms N        a workflow task turn running longer fails its attempt (default 1800000; with
                             PostgreSQL at most the claim expiry less 2 s)
  --approve WHEN             never | destructive | all: calls of job and scheduled turns that wait for an
                             operator (npm run controller -- approvals list|approve ID|deny ID); default destructive
  --approval-timeout-ms N    a stored approval nobody decides expires as denied after N ms (default 3600000)
  --base-url URL, --model NAME, --api responses|chat, --embedded, --stream / --no-stream, --tool-search MODE,
  --flatten-namespaces, --max-model-calls N
                             the model, as for npm start (default: the embedded scripted model)
  --help                     this text

The agents file's entries:
${AGENTS_FILE_KEYS}`;

const own = new Set(['--listen', '--data-dir', '--database', '--claim-expiry-s', '--agents', '--token-file', '--grace-ms', '--max-running-jobs', '--job-timeout-ms', '--max-running-tasks', '--task-timeout-ms', '--approve', '--approval-timeout-ms']);
const modelFlags = new Set(['--base-url', '--model', '--api', '--embedded', '--stream', '--no-stream', '--tool-search', '--flatten-namespaces', '--max-model-calls']);
const modelFlagsWithValue = new Set(['--base-url', '--model', '--api', '--tool-search', '--max-model-calls']);

/**
 * Parses `serve`'s flags; the model flags go through `npm start`'s parser.
 *
 * @throws ToolRuntimeError `invalid_request` on an unknown flag, a missing value or a bad number.
 */
export function parseServeOptions(argv: string[], env: NodeJS.ProcessEnv): ServeOptions {
  const values = new Map<string, string>();
  const modelArgs: string[] = [];
  let help = false;
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index]!;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (flag === '--help' || flag === '-h') {
      help = true;
    } else if (own.has(flag)) {
      const value = inline ?? argv[++index];
      if (value === undefined || value === '') throw new ToolRuntimeError('invalid_request', `${flag} needs a value`);
      values.set(flag, value);
    } else if (modelFlags.has(flag)) {
      modelArgs.push(arg);
      if (inline === undefined && modelFlagsWithValue.has(flag)) {
        const value = argv[++index];
        if (value === undefined) throw new ToolRuntimeError('invalid_request', `${flag} needs a value`);
        modelArgs.push(value);
      }
    } else {
      throw new ToolRuntimeError('invalid_request', `serve does not take "${arg}" (see --help)`);
    }
  }
  const cli = parseCliOptions(modelArgs, env);
  const agentsFile = values.get('--agents');
  if (!agentsFile && !help) throw new ToolRuntimeError('invalid_request', '--agents FILE is required: it maps each agent id to its sidecar');
  const approve = values.get('--approve') ?? 'destructive';
  if (approve !== 'never' && approve !== 'destructive' && approve !== 'all') {
    throw new ToolRuntimeError('invalid_request', `--approve must be "never", "destructive" or "all", not "${approve}"`);
  }
  const listen = values.get('--listen') ?? '127.0.0.1:7400';
  checkHostPort(listen, '--listen', { unix: true, example: '127.0.0.1:7400' });
  return {
    help,
    approve,
    approvalTimeoutMs: count(values, '--approval-timeout-ms', 3_600_000, 1),
    listen,
    dataDir: values.get('--data-dir') ?? defaultDataDir(),
    ...databaseOption(values.get('--database'), env),
    claimExpirySeconds: count(values, '--claim-expiry-s', 60, 1),
    agentsFile: agentsFile ?? '',
    ...(values.has('--token-file') ? { tokenFile: values.get('--token-file')! } : {}),
    graceMs: count(values, '--grace-ms', 10_000, 0),
    maxRunningJobsPerAgent: count(values, '--max-running-jobs', 2, 1),
    jobTimeoutMs: count(values, '--job-timeout-ms', 1_800_000, 1),
    maxRunningTasks: count(values, '--max-running-tasks', 16, 1),
    taskTimeoutMs: count(values, '--task-timeout-ms', 1_800_000, 1),
    model: {
      embedded: cli.embedded,
      ...(cli.baseURL ? { baseURL: cli.baseURL } : {}),
      ...(cli.apiKey ? { apiKey: cli.apiKey } : {}),
      model: cli.model,
      api: cli.api,
      stream: cli.stream,
      toolSearch: cli.toolSearch,
      flattenNamespaces: cli.flattenNamespaces,
      maxModelCalls: cli.maxModelCalls,
    },
  };
}

function count(values: Map<string, string>, flag: string, fallback: number, minimum: number): number {
  const text = values.get(flag);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < minimum) throw new ToolRuntimeError('invalid_request', `${flag} must be an integer of at least ${minimum}, not "${text}"`);
  return value;
}

function databaseOption(flag: string | undefined, env: NodeJS.ProcessEnv): { database?: string } {
  try {
    const database = resolveDatabaseOption(flag, env);
    return database ? { database } : {};
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', (error as Error).message);
  }
}
