import type { WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';
import { createFileTools } from './computer/file-tools.js';
import { reapLeftoverCommands } from './computer/leftover-commands.js';
import { createRunCommandTool } from './computer/run-command-tool.js';

/**
 * The computer category: run_command, read_file, write_file, edit_file and list_files, all confined
 * to `config.workspace`. Offered on text turns only (the workflow task catalog leaves it out).
 * The first call in a process kills what earlier sidecars on the same state folder left running.
 */
export function createComputerTools(context: CategoryContext, options: { killGraceMs?: number } = {}): WorkerAgentTool[] {
  reapLeftoverCommands(context.config.stateDir);
  const [readFile, writeFile, editFile, listFiles] = createFileTools({ config: context.config });
  return [createRunCommandTool({ config: context.config, killGraceMs: options.killGraceMs }), readFile!, writeFile!, editFile!, listFiles!];
}
