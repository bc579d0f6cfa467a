import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { defineWorkerTool, textResult, ToolRuntimeError, type WorkerAgentTool } from '../../../../src/index.js';
import type { CategoryConfig } from '../../category-config.js';
import type { TurnContext } from '../../category.js';
import type { SandboxPolicy } from '../sandbox/index.js';
import { commandEnv } from '../command-env.js';
import { instanceEnv } from '../leftover-commands.js';
import { resolveWorkspacePath } from '../workspace-path.js';
import { sessionCommandArgv } from './session-command.js';
import { boundedYield, DEFAULT_START_YIELD_MS, DEFAULT_WRITE_YIELD_MS, MAX_YIELD_MS, sessionReadResult, waitOnSession, type SessionReadDetails } from './session-read.js';
import { oneLine, type SessionTable } from './session-table.js';

/** The terminal size of a `tty` session. */
const TERMINAL = { cols: 120, rows: 40 };

const sessionId = z.string().min(1).max(200).describe('The id start_command returned, such as "s3".');
const yieldMs = (fallback: number) =>
  z.number().int().min(0).max(MAX_YIELD_MS).optional().describe(`How long to wait for output before returning, in milliseconds (default ${fallback}, at most ${MAX_YIELD_MS}); returns sooner if the command ends.`);

const startSchema = z.object({
  command: z.string().min(1).describe('The shell command, run with /bin/sh -c in the workspace.'),
  cwd: z.string().min(1).optional().describe('Working directory relative to the workspace root (default: the root).'),
  tty: z.boolean().optional().describe('Run in a pseudo-terminal (120×40): for prompts, REPLs, colours, full-screen programs. Default false: stdin is a pipe.'),
  yield_ms: yieldMs(DEFAULT_START_YIELD_MS),
});
const writeSchema = z.object({
  session_id: sessionId,
  input: z.string().describe('Characters to send: "\\n" is Enter, "\\u0003" Ctrl-C (interrupts), "\\u0004" Ctrl-D (end of input). Empty: send nothing, only read.'),
  yield_ms: yieldMs(DEFAULT_WRITE_YIELD_MS),
});
const readSchema = z.object({
  session_id: sessionId,
  yield_ms: yieldMs(0),
  screen: z.boolean().optional().describe('For a tty session: return the terminal screen as text (for full-screen programs) instead of the raw output.'),
});
const killSchema = z.object({ session_id: sessionId });

export interface SessionToolsOptions {
  config: CategoryConfig;
  turn: TurnContext;
  /** The sandbox this turn's sessions run under (the same as its run_command's). */
  policy: SandboxPolicy;
  table: SessionTable;
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
  const agentId = turn.agentId;
  const maxChars = config.limits.maxResultTextChars;

  const start = defineWorkerTool({
    name: 'start_command',
    description:
      'Start a shell command (/bin/sh -c) in the workspace that may run long or need input: a dev server, a watcher, a long build, a REPL, a prompt. Returns after yield_ms with the output so far: if the command ended by then, its exit code (as run_command); if not, a session id and "still running". Drive it with write_session / read_session, stop it with kill_session. Sessions outlive this turn; a session ends when its command exits. Use run_command for commands that just finish.',
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
      const env = { ...commandEnv({ allowList: config.commandEnvAllowList, extra: config.commandEnv }), ...instanceEnv() };
      const exec = await sessionCommandArgv({ command: params.command, cwd, env, tty, policy });
      const session = await table.start({ agentId, command: params.command, exec, tty, ...TERMINAL });
      return session.serialize(async () => {
        await waitOnSession(session, boundedYield(params.yield_ms, DEFAULT_START_YIELD_MS, context), context);
        return sessionReadResult({ session, table, maxChars });
      });
    },
  });

  const write = defineWorkerTool({
    name: 'write_session',
    description:
      'Send characters to a running session started by start_command (its stdin, or its terminal with tty), wait up to yield_ms, and return the output since the last read, with the exit code once the command has ended. "\\u0003" interrupts (Ctrl-C). Writes to one session apply in order.',
    schema: writeSchema,
    executionMode: 'parallel',
    isDestructive: true,
    describeActivity: (params) => (params.input === '' ? `Reading session ${params.session_id}` : `Writing ${JSON.stringify(params.input.slice(0, 40))} to session ${params.session_id}`),
    async execute(params, context) {
      const bytes = Buffer.byteLength(params.input);
      if (bytes > table.limits.maxInputBytes) {
        throw new ToolRuntimeError('input_too_large', `the input is ${bytes} bytes; one write_session sends at most ${table.limits.maxInputBytes}. Nothing was sent: split it into several writes, or write it to a file with write_file and have the command read the file.`);
      }
      const session = table.get(agentId, params.session_id);
      return session.serialize(async () => {
        if (!session.running && params.input !== '') {
          // An error message is cut at 8,000 characters: the output is cut to fit, saying how much.
          const ended = sessionReadResult({ session, table, maxChars: 7_000 });
          const text = ended.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
          throw new ToolRuntimeError('session_ended', `the input was not sent: the command had already ended. ${text}`);
        }
        session.write(params.input);
        await waitOnSession(session, boundedYield(params.yield_ms, DEFAULT_WRITE_YIELD_MS, context), context);
        return sessionReadResult({ session, table, maxChars });
      });
    },
  });

  const read = defineWorkerTool({
    name: 'read_session',
    description:
      'Read a session started by start_command without sending anything: the output since the last read (waiting up to yield_ms for more), or with screen: true the terminal screen of a tty session as text. Returns the exit code once the command has ended.',
    schema: readSchema,
    executionMode: 'parallel',
    isReadOnly: true,
    describeActivity: (params) => `Reading session ${params.session_id}${params.screen ? "'s screen" : ''}`,
    async execute(params, context) {
      const session = table.get(agentId, params.session_id);
      return session.serialize(async () => {
        await waitOnSession(session, boundedYield(params.yield_ms, 0, context), context);
        const screen = params.screen ? await session.screen() : undefined;
        return sessionReadResult({ session, table, maxChars, ...(screen !== undefined ? { screen } : {}) });
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
