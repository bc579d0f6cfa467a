import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { loadOnFirstUse } from '../../../src/load-on-first-use.js';

// yaml is loaded with the first SKILL.md: a sidecar without --skills never needs it.
const loadYaml = loadOnFirstUse<typeof import('yaml')>('yaml');

/** An MCP server a skill declares: a stdio command or an HTTP URL. */
export type SkillMcpServer = { command: string; args: string[]; env: Record<string, string> } | { url: string };

/** One skill read from `<skillsDir>/<folder>/SKILL.md`. */
export interface Skill {
  name: string;
  description: string;
  /** The knowledge: SKILL.md without its front matter. */
  body: string;
  folder: string;
  mcp?: SkillMcpServer;
}

/** A skill folder whose SKILL.md could not be used, and why. */
export interface SkillProblem {
  folder: string;
  message: string;
}

const isRelativePath = (value: string) => value.startsWith('./') || value.startsWith('../');

/**
 * Parses a SKILL.md: YAML front matter (`name`, `description`, optional `mcp: { command, args, env }`
 * or `mcp: { url }`) and the body. Relative `command`/`args` paths (starting with `./` or `../`) are
 * resolved against the skill folder. @throws Error with a readable message for a malformed file.
 */
export function parseSkillFile(text: string, folder: string): Skill {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!match) throw new Error('SKILL.md must start with YAML front matter between --- lines');
  const meta = loadYaml().parse(match[1]!) as Record<string, unknown> | null;
  if (!meta || typeof meta !== 'object') throw new Error('the front matter must be a YAML mapping');
  const name = typeof meta.name === 'string' && meta.name.trim() ? meta.name.trim() : path.basename(folder);
  const description = typeof meta.description === 'string' ? meta.description.trim() : '';
  const skill: Skill = { name, description, body: match[2]!.trim(), folder };
  const mcp = meta.mcp as Record<string, unknown> | undefined;
  if (mcp !== undefined && mcp !== null) {
    if (typeof mcp.url === 'string') skill.mcp = { url: mcp.url };
    else if (typeof mcp.command === 'string') {
      const args = Array.isArray(mcp.args) ? mcp.args.map(String) : [];
      const env = mcp.env && typeof mcp.env === 'object' ? Object.fromEntries(Object.entries(mcp.env).map(([k, v]) => [k, String(v)])) : {};
      const resolve = (value: string) => (isRelativePath(value) ? path.resolve(folder, value) : value);
      skill.mcp = { command: resolve(mcp.command), args: args.map(resolve), env };
    } else throw new Error('`mcp` needs either `command` (with optional `args` and `env`) or `url`');
  }
  return skill;
}

/**
 * Reads the skills under `skillsDir` (one folder each, holding SKILL.md), re-parsing only files
 * whose mtime or size changed since the last read. Sidecar-lifetime.
 */
export class SkillCatalog {
  private readonly cache = new Map<string, { mtimeMs: number; size: number; skill?: Skill; problem?: string }>();

  constructor(private readonly skillsDir: string) {}

  /** Every usable skill by name, and the folders whose SKILL.md is broken. */
  async load(): Promise<{ skills: Map<string, Skill>; problems: SkillProblem[] }> {
    const skills = new Map<string, Skill>();
    const problems: SkillProblem[] = [];
    const entries = await readdir(this.skillsDir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
      const folder = path.join(this.skillsDir, entry.name);
      const file = path.join(folder, 'SKILL.md');
      const info = await stat(file).catch(() => undefined);
      if (!info) continue;
      let cached = this.cache.get(file);
      if (!cached || cached.mtimeMs !== info.mtimeMs || cached.size !== info.size) {
        cached = { mtimeMs: info.mtimeMs, size: info.size };
        try {
          cached.skill = parseSkillFile(await readFile(file, 'utf8'), folder);
        } catch (error) {
          cached.problem = (error as Error).message;
        }
        this.cache.set(file, cached);
      }
      if (cached.skill) skills.set(cached.skill.name, cached.skill);
      else problems.push({ folder: entry.name, message: cached.problem ?? 'unreadable' });
    }
    return { skills, problems };
  }
}
