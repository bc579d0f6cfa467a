import path from 'node:path';
import type { Logger } from '../../src/index.js';
import type { CategoryConfig } from './category-config.js';
import type { CategoryContext, CategoryOutput } from './category.js';
import { commandEnv } from './computer/command-env.js';
import { policyFor } from './process-policy.js';
import { installMcporterWrapper, listMcpTools, mcporterServerEntry, writeMcporterConfig, type McpListing } from './skills/mcporter.js';
import { SkillCatalog, type Skill, type SkillMcpServer } from './skills/skill-catalog.js';

/** Sidecar-lifetime state of the skills category: the skill files and the MCP tool listings. */
export interface SkillsState {
  catalog: SkillCatalog;
  /** Tool listings by server config (JSON), so a server is listed once, not on every turn. */
  listings: Map<string, { at: number; listing: Promise<McpListing> }>;
  wrapper?: Promise<string>;
  logger: Logger;
  /** Bound on one `mcporter list`. Default 20,000 ms. */
  listTimeoutMs: number;
  /** A failed listing is retried after this long. Default 60,000 ms. */
  retryFailedAfterMs: number;
}

/** Makes the skills state for a sidecar; `undefined` when it has no skills folder. */
export function createSkillsState(config: CategoryConfig & { skillsDir?: string }, options: { logger: Logger; listTimeoutMs?: number; retryFailedAfterMs?: number }): SkillsState | undefined {
  if (!config.skillsDir) return undefined;
  return {
    catalog: new SkillCatalog(config.skillsDir),
    listings: new Map(),
    logger: options.logger,
    listTimeoutMs: options.listTimeoutMs ?? 20_000,
    retryFailedAfterMs: options.retryFailedAfterMs ?? 60_000,
  };
}

const serverName = (skill: Skill) => skill.name.toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '') || 'skill';
const quote = (value: string) => (/^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`);

async function listingFor(state: SkillsState, config: CategoryConfig, mcporter: string, server: string, definition: SkillMcpServer, signal: AbortSignal): Promise<McpListing> {
  const key = JSON.stringify(mcporterServerEntry(definition));
  const cached = state.listings.get(key);
  if (cached) {
    const listing = await cached.listing;
    if (listing.ok || Date.now() - cached.at < state.retryFailedAfterMs) return listing;
  }
  const listing = (async () => {
    const configPath = await writeMcporterConfig(path.join(config.stateDir, 'mcporter', 'servers'), { [server]: definition });
    const env = commandEnv({ allowList: config.commandEnvAllowList, extra: config.commandEnv });
    // The listing is cached across turns, so it runs under the operator's policy, not a turn's tightening.
    return listMcpTools({ mcporter, configPath, server, env, cwd: config.workspace, policy: policyFor(config), timeoutMs: state.listTimeoutMs, signal });
  })();
  state.listings.set(key, { at: Date.now(), listing });
  return listing;
}

function describeListing(server: string, listing: McpListing): string {
  if (!listing.ok) return `The server \`${server}\` could not be listed (${listing.error}); its tools are unavailable for now.`;
  if (listing.tools.length === 0) return `The server \`${server}\` offers no tools.`;
  return ['Tools:', ...listing.tools.map((tool) => `- \`${server}.${tool.name}\`(${tool.parameters.join(', ')})${tool.description ? ` — ${tool.description}` : ''}`)].join('\n');
}

/**
 * The skills category: no tools of its own; it projects the enabled skills' knowledge
 * (`context.turn.enabledSkills`) into the instructions. For an MCP-backed skill it writes the
 * mcporter configuration of the turn's servers under `config.stateDir`, lists each server's tools
 * once (cached per server config, bounded by a timeout) and tells the model how to call them with
 * run_command and mcporter. An unknown enabled skill or a failing server is reported in the
 * instructions and logged, never thrown.
 */
export async function createSkillsProjection(context: CategoryContext, state: SkillsState | undefined): Promise<CategoryOutput> {
  const enabled = context.turn.enabledSkills;
  if (enabled.length === 0) return { tools: [] };
  if (!state) {
    return { tools: [], instructions: `# Skills\n\nThe skills ${enabled.map((n) => `\`${n}\``).join(', ')} are enabled, but this computer has no skills folder, so none is available.` };
  }
  const { skills, problems } = await state.catalog.load();
  for (const problem of problems) state.logger.warn('skill file is unusable', { folder: problem.folder, error: problem.message });
  const unknown = enabled.filter((name) => !skills.has(name));
  if (unknown.length > 0) state.logger.warn('enabled skills not found', { skills: unknown, agentId: context.turn.agentId, turnId: context.turn.turnId });
  const chosen = enabled.map((name) => skills.get(name)).filter((skill): skill is Skill => skill !== undefined);

  const servers: Record<string, SkillMcpServer> = {};
  for (const skill of chosen) if (skill.mcp) servers[serverName(skill)] = skill.mcp;
  let configPath = '';
  let mcporter = '';
  const listings = new Map<string, McpListing>();
  if (Object.keys(servers).length > 0) {
    state.wrapper ??= installMcporterWrapper(path.join(context.config.stateDir, 'mcporter'));
    mcporter = await state.wrapper;
    configPath = await writeMcporterConfig(path.join(context.config.stateDir, 'mcporter'), servers);
    const results = await Promise.all(Object.entries(servers).map(async ([server, definition]) => [server, await listingFor(state!, context.config, mcporter, server, definition, context.signal)] as const));
    for (const [server, listing] of results) {
      listings.set(server, listing);
      if (!listing.ok) state.logger.warn('MCP server could not be listed', { server, error: listing.error });
    }
  }

  const sections = ['# Skills', 'These skills are enabled for you. Use their knowledge when it applies.'];
  for (const skill of chosen) {
    sections.push(`## ${skill.name}${skill.description ? `\n\n${skill.description}` : ''}${skill.body ? `\n\n${skill.body}` : ''}`);
    if (skill.mcp) {
      const server = serverName(skill);
      sections.push(
        [
          `### MCP server \`${server}\``,
          `Call its tools with the run_command tool, through mcporter (arguments as key=value; use --args '<json>' for nested values):`,
          '```sh',
          `${quote(mcporter)} --config ${quote(configPath)} call ${server}.<tool> key=value`,
          '```',
          describeListing(server, listings.get(server)!),
        ].join('\n'),
      );
    }
  }
  if (unknown.length > 0) sections.push(`Unknown skills (enabled, but no such skill in the skills folder): ${unknown.map((n) => `\`${n}\``).join(', ')}.`);
  return { tools: [], instructions: sections.join('\n\n') };
}
