import type { WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';
import { createApplyPatchTool } from './computer/apply-patch/apply-patch-tool.js';
import { createFileTools } from './computer/file-tools.js';
import { createWorkspaceFiles } from './computer/files/workspace-files.js';
import { reapLeftoverCommands } from './computer/leftover-commands.js';
import { createRunCommandTool } from './computer/run-command-tool.js';
import { policyFor, sandboxSettingsOf } from './process-policy.js';
import { SessionTable } from './computer/sessions/session-table.js';
import { createSessionTools } from './computer/sessions/session-tools.js';

let sharedTable: SessionTable | undefined;

/**
 * The process's one session table, for creators not given one (an embedding that builds its own
 * catalogs): it lives as long as the process, and its sessions die with it through the reaper.
 */
function sharedSessionTable(): SessionTable {
  sharedTable ??= new SessionTable();
  return sharedTable;
}

/**
 * The computer category: run_command, read_file, write_file, edit_file, apply_patch, list_files, and the
 * command-session tools (start_command, write_session, read_session, list_sessions, kill_session),
 * all confined to `config.workspace` and held to the turn's sandbox policy. Offered on text turns
 * only (the workflow task catalog leaves it out). Sessions live in `options.sessions`
 * (createCatalogs makes one per sidecar and closes it).
 * The first call in a process kills what earlier sidecars on the same state folder left running.
 */
export function createComputerTools(context: CategoryContext, options: { killGraceMs?: number; sessions?: SessionTable } = {}): WorkerAgentTool[] {
  reapLeftoverCommands(context.config.stateDir);
  // One policy per turn: the operator's sandbox, tightened by the turn's own request.
  const policy = policyFor(context.config, context.turn.sandbox, context.turn.agentId);
  // One safe-I/O object for every file tool of the turn: the same walk, rule and identities.
  const files = createWorkspaceFiles({ workspace: context.config.workspace, policy });
  const [readFile, writeFile, editFile, listFiles] = createFileTools({ config: context.config, policy, files });
  // A turn that tightened the sandbox gets no way around it.
  const offerUnsandboxed = sandboxSettingsOf(context.config).allowUnsandboxed && context.turn.sandbox === undefined;
  return [
    createRunCommandTool({ config: context.config, policy, offerUnsandboxed, killGraceMs: options.killGraceMs }),
    readFile!,
    writeFile!,
    editFile!,
    createApplyPatchTool({ files }),
    listFiles!,
    ...createSessionTools({ config: context.config, turn: context.turn, policy, table: options.sessions ?? sharedSessionTable() }),
  ];
}
