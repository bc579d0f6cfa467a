import { stat } from 'node:fs/promises';
import { formatBytes } from './sandbox/index.js';
import { z } from 'zod';
import { defineWorkerTool, textResult, ToolRuntimeError, truncateMiddle, type WorkerAgentTool } from '../../../src/index.js';
import type { CategoryConfig } from '../category-config.js';
import { commandEnv } from './command-env.js';
import { instanceEnv } from './leftover-commands.js';
import { runProcess } from './run-process.js';
import type { ProcessPolicy } from './sandbox/index.js';
import { resolveWorkspacePath } from './workspace-path.js';

/** The default and the largest `timeout_ms` of run_command. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 120_000;
export const MAX_COMMAND_TIMEOUT_MS = 60 * 60_000;

const schema = z.object({
  command: z.string().min(1).describe('The shell command, run with /bin/sh -c in the workspace.'),
  cwd: z.string().min(1).optional().describe('Working directory relative to the workspace root (default: the root).'),
  timeout_ms: z
    .number()
    .int()
    .min(1)
    .max(MAX_COMMAND_TIMEOUT_MS)
    .optional()
    .describe(`Kill the command after this many milliseconds (default ${DEFAULT_COMMAND_TIMEOUT_MS}).`),
});

const unsandboxedSchema = schema.extend({
  unsandboxed: z
    .boolean()
    .optional()
    .describe(
      'Run this one command outside the sandbox (full file system, network, the sidecar\'s rights). Every such call waits for a person\'s approval; ask only when the sandbox stops a needed step, and say why.',
    ),
});

/** What run_command records in its result's details. */
export interface RunCommandDetails {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** True when the OOM killer ended it at its agent's memory limit. */
  outOfMemory?: boolean;
  durationMs: number;
  cutChars: number;
  /** True when it ran outside the sandbox (approved). */
  unsandboxed?: boolean;
}

function short(command: string): string {
  const line = command.replace(/\s+/g, ' ').trim();
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

/**
 * The `run_command` tool: `/bin/sh -c` inside the workspace, under the turn's sandbox `policy`
 * (a call fails with `sandbox_unavailable`, nothing run, when the sandbox cannot be had), stdin closed, env from the allow-list
 * plus `config.commandEnv`, output streamed as `command.output` events and returned head and tail.
 * A timeout (its own, or the call's signal) kills the whole process group. On the call's abort it
 * throws `aborted` once the group is dead; on its own timeout it returns the output so far.
 */
export function createRunCommandTool(options: {
  config: CategoryConfig;
  policy: ProcessPolicy;
  /** Offer `unsandboxed: true` (the operator's --allow-unsandboxed, and a turn that did not tighten the sandbox). */
  offerUnsandboxed?: boolean;
  killGraceMs?: number;
}): WorkerAgentTool<z.output<typeof unsandboxedSchema>> {
  const { config, policy } = options;
  const offerUnsandboxed = options.offerUnsandboxed === true && policy.mode !== 'off';
  const unconfined: ProcessPolicy = { ...policy, mode: 'off', network: { mode: 'on' } };
  return defineWorkerTool<typeof unsandboxedSchema>({
    name: 'run_command',
    description:
      'Run a shell command (/bin/sh -c) in the workspace and return its exit code and output (stdout and stderr interleaved; long output keeps its head and tail). stdin is closed: the command must not wait for input.',
    schema: (offerUnsandboxed ? unsandboxedSchema : schema) as typeof unsandboxedSchema,
    executionMode: 'sequential',
    isDestructive: true,
    // The Responses API's own `shell` tool runs here: its calls carry one command each, and the
    // `command.output` events give it stdout and stderr apart.
    nativeTool: 'shell',
    // Nothing runs outside the operator's sandbox without a person saying yes, whatever the turn's policy.
    ...(offerUnsandboxed ? { alwaysAsks: (params: { unsandboxed?: boolean }) => params.unsandboxed === true } : {}),
    describeActivity: (params) => `Running \`${short(params.command)}\`${offerUnsandboxed && params.unsandboxed ? ' OUTSIDE the sandbox' : ''}`,
    describeCompletedActivity: (params, result) => {
      const details = result.details as RunCommandDetails | undefined;
      if (!details) return `Ran \`${short(params.command)}\``;
      const status = details.timedOut ? 'timed out' : details.outOfMemory ? 'out of memory' : details.exitCode !== null ? `exit ${details.exitCode}` : `killed by ${details.signal}`;
      return `Ran \`${short(params.command)}\` (${status}, ${(details.durationMs / 1000).toFixed(1)} s)`;
    },
    async execute(params, context) {
      const cwd = params.cwd === undefined ? (await resolveWorkspacePath(config.workspace, '.', { signal: context.signal })).absolute : (await resolveWorkspacePath(config.workspace, params.cwd, { signal: context.signal })).absolute;
      const cwdStat = await stat(cwd).catch(() => undefined);
      if (!cwdStat?.isDirectory()) throw new ToolRuntimeError('invalid_arguments', `cwd ${JSON.stringify(params.cwd)} is not a directory in the workspace`);
      const timeoutMs = params.timeout_ms ?? DEFAULT_COMMAND_TIMEOUT_MS;
      const timeout = AbortSignal.timeout(timeoutMs);
      const outcome = await runProcess({
        command: params.command,
        policy: offerUnsandboxed && params.unsandboxed ? unconfined : policy,
        cwd,
        env: { ...commandEnv({ allowList: config.commandEnvAllowList, extra: config.commandEnv }), ...instanceEnv() },
        signal: AbortSignal.any([context.signal, timeout]),
        killGraceMs: options.killGraceMs,
        maxOutputChars: config.limits.maxResultTextChars,
        onOutput: (stream, text) => context.emit({ kind: 'command.output', payload: { stream, text } }),
      });
      if (context.signal.aborted) {
        throw new ToolRuntimeError('aborted', `run_command was aborted; its process group was killed after ${Math.round(outcome.durationMs)} ms`);
      }
      const timedOut = outcome.killed && timeout.aborted;
      const shown = truncateMiddle(outcome.output, config.limits.maxResultTextChars - 200);
      const cutChars = outcome.cutChars + shown.cutChars;
      const status = timedOut
        ? `timed out after ${timeoutMs} ms; the process group was killed`
        : outcome.outOfMemory
          ? `killed: out of memory (limit ${formatBytes(outcome.outOfMemory.limitBytes)}; this agent's processes share it)`
          : outcome.exitCode !== null
          ? `exit code ${outcome.exitCode}`
          : `killed by signal ${outcome.signal}`;
      const header = `${status} (${(outcome.durationMs / 1000).toFixed(1)} s)${cutChars > 0 ? `; ${cutChars} characters of output cut from the middle` : ''}`;
      const details: RunCommandDetails = {
        exitCode: outcome.exitCode,
        signal: outcome.signal,
        timedOut,
        ...(outcome.outOfMemory ? { outOfMemory: true } : {}),
        durationMs: Math.round(outcome.durationMs),
        cutChars,
        ...(offerUnsandboxed && params.unsandboxed ? { unsandboxed: true } : {}),
      };
      return textResult(`${header}\n${shown.text === '' ? '(no output)' : shown.text}`, { details });
    },
  });
}
