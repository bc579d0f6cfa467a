import type { WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';
import { createFileTools } from './computer/file-tools.js';
import { reapLeftoverCommands } from './computer/leftover-commands.js';
import { createRunCommandTool } from './computer/run-command-tool.js';
import { policyFor, sandboxSettingsOf } from './computer/sandbox/start-process.js';

/**
 * The computer category: run_command, read_file, write_file, edit_file and list_files, all confined
 * to `config.workspace` and held to the turn's sandbox policy. Offered on text turns only (the workflow task catalog leaves it out).
 * The first call in a process kills what earlier sidecars on the same state folder left running.
 */
export function createComputerTools(context: CategoryContext, options: { killGraceMs?: number } = {}): WorkerAgentTool[] {
  reapLeftoverCommands(context.config.stateDir);
  // One policy per turn: the operator's sandbox, tightened by the turn's own request.
  const policy = policyFor(context.config, context.turn.sandbox);
  const [readFile, writeFile, editFile, listFiles] = createFileTools({ config: context.config, policy });
  // A turn that tightened the sandbox gets no way around it.
  const offerUnsandboxed = sandboxSettingsOf(context.config).allowUnsandboxed && context.turn.sandbox === undefined;
  return [createRunCommandTool({ config: context.config, policy, offerUnsandboxed, killGraceMs: options.killGraceMs }), readFile!, writeFile!, editFile!, listFiles!];
}
