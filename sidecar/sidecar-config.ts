import type { BrainLimits } from './categories/brain/brain-protocol.js';
import type { CategoryConfig } from './categories/category-config.js';
import type { McpServerSpec } from './categories/mcp/mcp-servers-file.js';
import type { WebFetchProfile, WebSearchProfile } from './categories/web/web-profiles.js';

// The composed configuration names every category's part, so only the start-up (the CLI's flags,
// startSidecar, the catalogs' composition in tool-sets.ts) imports it; the gRPC layer, the turn and
// the categories see CategoryConfig and sidecar-limits.ts (a rule of .dependency-cruiser.cjs).

/**
 * The sidecar's configuration: what the CLI flags (or an embedding program) set. Every category
 * reads the common part (`CategoryConfig`); its own part is handed to it by the catalogs, and a
 * category whose part is absent offers no tools.
 */
export interface SidecarConfig extends CategoryConfig {
  webFetch?: WebFetchProfile;
  webSearch?: WebSearchProfile;
  /** Folder of markdown pages for the Brain tools; Brain is absent when unset. */
  brainDir?: string;
  /** The Brain's caps (page count, page size, total bytes); defaults where unset. */
  brainLimits?: Partial<BrainLimits>;
  /** Folder of skills (each a folder with SKILL.md); no skills when unset. */
  skillsDir?: string;
  /** MCP servers whose tools join text turns (`--mcp-servers FILE`), one namespace each, deferred. */
  mcpServers?: McpServerSpec[];
}

/** The variables a command inherits from the sidecar when nothing else is configured. */
export const defaultCommandEnvAllowList = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TERM', 'TMPDIR', 'TZ', 'USER', 'SHELL', 'NODE_OPTIONS'];
