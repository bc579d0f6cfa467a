import type { WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';
import { createFileTools } from './computer/file-tools.js';
import { createRunCommandTool } from './computer/run-command-tool.js';

/**
 * The computer category: run_command, read_file, write_file, edit_file and list_files, all confined
 * to `config.workspace`. Offered on text turns only (the workflow task catalog leaves it out).
 */
export function createComputerTools(context: CategoryContext, options: { killGraceMs?: number } = {}): WorkerAgentTool[] {
  const [readFile, writeFile, editFile, listFiles] = createFileTools({ config: context.config });
  return [createRunCommandTool({ config: context.config, killGraceMs: options.killGraceMs }), readFile!, writeFile!, editFile!, listFiles!];
}
