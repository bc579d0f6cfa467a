import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { defineWorkerTool, textResult, ToolRuntimeError, type WorkerAgentTool } from '../../../../src/index.js';
import type { CategoryConfig } from '../../category-config.js';
import type { TurnContext } from '../../category.js';
import { sharedAgentNetworks, type AgentNetworks, type SandboxPolicy } from '../sandbox/index.js';
import { commandEnv } from '../command-env.js';
import { instanceEnv } from '../leftover-commands.js';
import { resolveWorkspacePath } from '../workspace-path.js';
import { sessionCommandArgv } from './session-command.js';
import { boundedYield, DEFAULT_START_YIELD_MS, DEFAULT_WRITE_YIELD_MS, MAX_YIELD_MS, sessionReadResult, waitOnSession, type SessionReadDetails } from './session-read.js';
import { oneLine, type SessionTable } from './session-table.js';
import { SETTLE_MS, terminalEcho } from './session-wait.js';
import { MAX_UNTIL_CHARS, parseUntil } from './until-pattern.js';

/** The terminal size of a `tty` session unless the call gives one, and the sizes allowed. */
const TERMINAL = { cols: 120, rows: 40 };
export const TERMINAL_BOUNDS = { cols: { min: 20, max: 500 }, rows: { min: 5, max: 200 } };

const sessionId = z.string().min(1).max(200).describe('The id start_command returned, such as "s3".');
const yieldMs = (fallback: number) =>
  z
    .number()
    .int()
    .min(0)
    .max(MAX_YIELD_MS)
    .optional()
    .describe(`The longest wait for an answer, in milliseconds (default ${fallback}, at most ${MAX_YIELD_MS}). Returns sooner: when the command ends, when it has answered and printed nothing more for ${SETTLE_MS} ms, or when \`until\` appears.`);
const until = z
  .string()
  .min(1)
  .max(MAX_UNTIL_CHARS)
  .optional()
  .describe('Return as soon as this text appears in the output, such as ">>> " or "$ " (a prompt) or "Listening on"; /pattern/flags for a regular expression. While given, a pause in the output does not end the wait.');
const cols = z.number().int().min(TERMINAL_BOUNDS.cols.min).max(TERMINAL_BOUNDS.cols.max).optional();
const rows = z.number().int().min(TERMINAL_BOUNDS.rows.min).max(TERMINAL_BOUNDS.rows.max).optional();

const startSchema = z.object({
  command: z.string().min(1).describe('The shell command, run with /bin/sh -c in the workspace.'),
  cwd: z.string().min(1).optional().describe('Working directory relative to the workspace root (default: the root).'),
  tty: z.boolean().optional().describe('Run in a pseudo-terminal (120×40 unless cols/rows say otherwise): for prompts, REPLs, colours, full-screen programs. Default false: stdin is a pipe.'),
  cols: cols.describe(`With tty: the terminal's width in columns (${TERMINAL_BOUNDS.cols.min} to ${TERMINAL_BOUNDS.cols.max}, default ${TERMINAL.cols}).`),
  rows: rows.describe(`With tty: the terminal's height in rows (${TERMINAL_BOUNDS.rows.min} to ${TERMINAL_BOUNDS.rows.max}, default ${TERMINAL.rows}).`),
  yield_ms: yieldMs(DEFAULT_START_YIELD_MS),
  until,
});
const writeSchema = z.object({
  session_id: sessionId,
  input: z.string().describe('Characters to send: "\\n" is Enter, "\\u0003" Ctrl-C (interrupts), "\\u0004" Ctrl-D (end of input). Empty: send nothing, only read.'),
  yield_ms: yieldMs(DEFAULT_WRITE_YIELD_MS),
  until,
  cols: cols.describe('Resize a tty session\'s terminal to this many columns before sending the input (the program gets SIGWINCH and redraws); give rows too.'),
  rows: rows.describe('Resize a tty session\'s terminal to this many rows before sending the input; give cols too.'),
});
const readSchema = z.object({
  session_id: sessionId,
  yield_ms: yieldMs(0),
  until,
  screen: z.boolean().optional().describe('For a tty session: return the terminal screen as text (for full-screen programs) instead of the raw output.'),
});
const killSchema = z.object({ session_id: sessionId });

export interface SessionToolsOptions {
  config: CategoryConfig;
  turn: TurnContext;
  /** The sandbox this turn's sessions run under (the same as its run_command's). */
  policy: SandboxPolicy;
  table: SessionTable;
  /** The agents' shared network namespaces (default: the process's). */
  networks?: AgentNetworks;
}

/**
 * The command-session tools of the computer category, for one turn of `turn.agentId`:
 * start_command, write_session, read_session, list_sessions and kill_session. Sessions live in
 * `table` (the sidecar's), so they outlive the turn and are seen only by the same agent. A session
 * runs under the sandbox `policy` of the turn that started it, for its whole life.
 *
 * Execution modes: start_command is sequential, like run_command (it runs a command that may change
 * the workspace, ordered with the other commands and file writes). The others run in parallel with
 * other calls, so reading two sessions does not wait twice; every call that names one session is
 * applied to it in the order the calls started (per-session queue), so writes to a session are
 * ordered and each read returns the output after the write before it. kill_session is not queued:
 * it acts at once, and a call waiting on the session returns with its end.
 */
export function createSessionTools(options: SessionToolsOptions): WorkerAgentTool[] {
  const { config, turn, table, policy } = options;
  const networks = options.networks ?? sharedAgentNetworks();
  const agentId = turn.agentId;
  const maxChars = config.limits.maxResultTextChars;

  const start = defineWorkerTool({
    name: 'start_command',
    description:
      'Start a shell command (/bin/sh -c) in the workspace that may run long or need input: a dev server, a watcher, a long build, a REPL, a prompt. Returns with the output so far once the command has answered (its output went quiet), `until` appeared, or yield_ms passed: if the command ended by then, its exit code (as run_command); if not, a session id and "still running". Drive it with write_session / read_session, stop it with kill_session. Sessions outlive this turn; a session ends when its command exits. Use run_command for commands that just finish.',
    schema: startSchema,
    executionMode: 'sequential',
    isDestructive: true,
    describeActivity: (params) => `Starting \`${oneLine(params.command)}\`${params.tty ? ' in a terminal' : ''}`,
    describeCompletedActivity: (params, result) => {
      const details = result.details as SessionReadDetails | undefined;
      if (!details) return `Started \`${oneLine(params.command)}\``;
      return details.running ? `Started \`${oneLine(params.command)}\` as session ${details.sessionId}` : `Ran \`${oneLine(params.command)}\` (${details.exitCode !== null ? `exit ${details.exitCode}` : `killed by ${details.signal}`})`;
    },
    async execute(params, context) {
      const cwd = (await resolveWorkspacePath(config.workspace, params.cwd ?? '.', { signal: context.signal })).absolute;
      if (!(await stat(cwd).catch(() => undefined))?.isDirectory()) throw new ToolRuntimeError('invalid_arguments', `cwd ${JSON.stringify(params.cwd)} is not a directory in the workspace`);
      const tty = params.tty ?? false;
      if (!tty && (params.cols !== undefined || params.rows !== undefined)) throw new ToolRuntimeError('invalid_arguments', 'cols and rows size a terminal: give them with tty: true (a session with pipes has no terminal)');
      const matcher = params.until !== undefined ? parseUntil(params.until) : undefined;
      const env = { ...commandEnv({ allowList: config.commandEnvAllowList, extra: config.commandEnv }), ...instanceEnv() };
      // The agent's network namespace, made if it has none: a session is what another command of the
      // agent may want to reach (a dev server). Held for the session's life.
      const lease = await networks.acquire(agentId, policy, { create: true });
      let session;
      try {
        const exec = await sessionCommandArgv({ command: params.command, cwd, env, tty, policy, ...(lease ? { joinNetwork: lease.join } : {}) });
        session = await table.start({ agentId, command: params.command, exec, tty, cols: params.cols ?? TERMINAL.cols, rows: params.rows ?? TERMINAL.rows });
      } catch (error) {
        lease?.release();
        throw error;
      }
      if (lease) void session.ended.then(() => lease.release());
      return session.serialize(async () => {
        const yieldFor = boundedYield(params.yield_ms, DEFAULT_START_YIELD_MS, context);
        // Everything since the start is the answer: output held already counts.
        const wait = await waitOnSession(session, { yieldMs: yieldFor, seen: session.peek(), ...(matcher ? { until: matcher } : {}) }, context);
        return sessionReadResult({ session, table, maxChars, wait, yieldMs: yieldFor });
      });
    },
  });

  const write = defineWorkerTool({
    name: 'write_session',
    description:
      'Send characters to a running session started by start_command (its stdin, or its terminal with tty) and return the output since the last read once the program has answered: its output went quiet, `until` appeared, it ended (with its exit code), or yield_ms passed. With cols and rows, resizes the terminal first. "\\u0003" interrupts (Ctrl-C). Writes to one session apply in order.',
    schema: writeSchema,
    executionMode: 'parallel',
    isDestructive: true,
    describeActivity: (params) => (params.input === '' ? `Reading session ${params.session_id}` : `Writing ${JSON.stringify(params.input.slice(0, 40))} to session ${params.session_id}`),
    async execute(params, context) {
      const bytes = Buffer.byteLength(params.input);
      if (bytes > table.limits.maxInputBytes) {
        throw new ToolRuntimeError('input_too_large', `the input is ${bytes} bytes; one write_session sends at most ${table.limits.maxInputBytes}. Nothing was sent: split it into several writes, or write it to a file with write_file and have the command read the file.`);
      }
      if ((params.cols === undefined) !== (params.rows === undefined)) throw new ToolRuntimeError('invalid_arguments', 'give cols and rows together to resize the terminal');
      const matcher = params.until !== undefined ? parseUntil(params.until) : undefined;
      const session = table.get(agentId, params.session_id);
      return session.serialize(async () => {
        if (!session.running && params.input !== '') {
          // An error message is cut at 8,000 characters: the output is cut to fit, saying how much.
          const ended = sessionReadResult({ session, table, maxChars: 7_000 });
          const text = ended.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
          throw new ToolRuntimeError('session_ended', `the input was not sent: the command had already ended. ${text}`);
        }
        if (params.cols !== undefined && params.rows !== undefined) session.resize(params.cols, params.rows);
        session.write(params.input);
        const yieldFor = boundedYield(params.yield_ms, DEFAULT_WRITE_YIELD_MS, context);
        // Only output after this write answers it; a terminal's echo of the input does not.
        const wait = await waitOnSession(session, { yieldMs: yieldFor, ...(session.tty ? { echo: terminalEcho(params.input) } : {}), ...(matcher ? { until: matcher } : {}) }, context);
        const resized = params.cols !== undefined ? `terminal resized to ${params.cols}×${params.rows}` : undefined;
        return sessionReadResult({ session, table, maxChars, wait, yieldMs: yieldFor, ...(resized ? { note: resized } : {}) });
      });
    },
  });

  const read = defineWorkerTool({
    name: 'read_session',
    description:
      'Read a session started by start_command without sending anything: the output since the last read (waiting up to yield_ms for more, or for `until`), or with screen: true the terminal screen of a tty session as text. Returns the exit code once the command has ended.',
    schema: readSchema,
    executionMode: 'parallel',
    isReadOnly: true,
    describeActivity: (params) => `Reading session ${params.session_id}${params.screen ? "'s screen" : ''}`,
    async execute(params, context) {
      const matcher = params.until !== undefined ? parseUntil(params.until) : undefined;
      const session = table.get(agentId, params.session_id);
      return session.serialize(async () => {
        const yieldFor = boundedYield(params.yield_ms, 0, context);
        // Unread output is an answer already: it returns once quiet, or at once with yield_ms 0.
        const wait = await waitOnSession(session, { yieldMs: yieldFor, seen: session.peek(), ...(matcher ? { until: matcher } : {}) }, context);
        const screen = params.screen ? await session.screen() : undefined;
        return sessionReadResult({ session, table, maxChars, wait, yieldMs: yieldFor, ...(screen !== undefined ? { screen } : {}) });
      });
    },
  });

  const list = defineWorkerTool({
    name: 'list_sessions',
    description: 'List your command sessions: id, command, state (running or exited with its code), age and unread output.',
    schema: z.object({}),
    executionMode: 'parallel',
    isReadOnly: true,
    describeActivity: () => 'Listing sessions',
    async execute() {
      const sessions = table.list(agentId);
      const text = sessions.length === 0 ? 'no sessions; start one with start_command' : table.describe(agentId);
      return textResult(text, { details: { sessions } });
    },
  });

  const kill = defineWorkerTool({
    name: 'kill_session',
    description: 'Stop a session: its whole process group gets SIGTERM, then SIGKILL. Returns its last output and exit status; the session is then gone.',
    schema: killSchema,
    executionMode: 'parallel',
    describeActivity: (params) => `Stopping session ${params.session_id}`,
    // Not queued behind the session's other calls: a kill acts at once, and a read or write
    // waiting on the session returns with its end.
    async execute(params) {
      const session = table.get(agentId, params.session_id);
      await session.kill();
      return sessionReadResult({ session, table, maxChars });
    },
  });

  return [start, write, read, list, kill];
}
