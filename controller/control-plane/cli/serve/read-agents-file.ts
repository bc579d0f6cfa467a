import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { errorMessage, ToolRuntimeError } from '../../../../src/index.js';
import type { SidecarFeatures, TurnFeatures } from '../../../cli/sidecar-feature-flags.js';

/** What an agent's turns get, whichever kind of entry names its sidecar. */
export interface AgentTurnSettings {
  /** Brain and skills turned on for the agent's turns (job and workflow task turns alike). */
  turnFeatures: TurnFeatures;
  /** The system prompt of the agent's job and scheduled turns, instead of the default one. */
  instructions?: string;
}

/** Where one agent's sidecar is: a running one, or a workspace to start one over. */
export type AgentSidecarEntry = AgentTurnSettings &
  (
    | { kind: 'address'; address: string; tokenFile?: string; /** PEM of the CA of a TLS sidecar. */ caFile?: string }
    | {
        kind: 'workspace';
        workspace: string;
        stateDir?: string;
        sandbox?: 'off' | 'read-only' | 'workspace-write';
        user?: { uid: number; gid: number };
        mcpServers?: string;
        /** What the started sidecar is given: tool modules, network, web, Brain, skills, hidden paths. */
        features: SidecarFeatures;
        /** Its `--limits`: what the agent's processes may use together. */
        limits?: string;
      }
  );

/**
 * The most agents one `serve` process takes: a platform's fleet (the fleet simulation runs 1,000),
 * still a bound on what one file can make a controller hold.
 */
export const MAX_AGENTS = 10_000;

const AGENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const pathValue = z.string().min(1).max(4096);
/** Keys of both kinds of entry: what the agent's turns get. */
const turnKeys = {
  enabledSkills: z.array(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'a skill name is its folder\'s name')).max(256).optional(),
  instructions: z.string().min(1).max(1_000_000).optional(),
  instructionsFile: pathValue.optional(),
};
const entry = z.union([
  z.strictObject({ address: z.string().min(1).max(512), tokenFile: pathValue.optional(), caFile: pathValue.optional(), enableBrain: z.boolean().optional(), ...turnKeys }),
  z.strictObject({
    ...turnKeys,
    tools: z.array(z.string().min(1).max(4096)).max(64).optional(),
    network: z.string().regex(/^(off|on|allow:.+)$/, 'network is "off", "on" or "allow:HOST,..."').optional(),
    webFetch: z.boolean().optional(),
    brain: pathValue.optional(),
    skills: pathValue.optional(),
    hide: z.array(pathValue).max(256).optional(),
    workspace: z.string().min(1).max(4096),
    stateDir: z.string().min(1).max(4096).optional(),
    sandbox: z.enum(['off', 'read-only', 'workspace-write']).optional(),
    // Another user for the sidecar (and so every command of the model): it cannot read this
    // controller's data folder or token files, sandbox or not. Numeric, as the kernel takes it.
    user: z.string().regex(/^\d{1,10}(:\d{1,10})?$/, 'user is "UID" or "UID:GID" (numbers)').optional(),
    mcpServers: z.string().min(1).max(4096).optional(),
    // Its sidecar's --limits (checked by that sidecar at start): "off" or "memory=2G,pids=512,...".
    limits: z.string().regex(/^(off|on|[a-z]+=[0-9A-Za-z.]+(,[a-z]+=[0-9A-Za-z.]+)*)$/, 'limits is "off" or "memory=SIZE,pids=N,cpus=N,tmp=SIZE"').optional(),
  }),
]);
const file = z.record(z.string(), entry);

/** The keys of an agents-file entry, for `serve --help` and errors. */
export const AGENTS_FILE_KEYS = `A running sidecar: {"address": "HOST:PORT", "tokenFile": "F", "caFile": "CA.pem", "enableBrain": true}
  (caFile: connect over TLS trusting that CA; enableBrain: its Brain for the agent's task turns)
A sidecar to start: {"workspace": "DIR", "stateDir": "DIR", "sandbox": "off|read-only|workspace-write",
  "user": "UID[:GID]", "mcpServers": "FILE", "tools": ["./my-tools.js"], "network": "off|on|allow:HOST,...",
  "webFetch": true, "brain": "DIR", "skills": "DIR", "hide": ["PATH"]}
  (the sidecar's flags of the same names; brain also turns Brain on for the agent's task turns;
  user needs stateDir, a folder that user can write)
Both: "enabledSkills": ["NAME"] (skills on for the agent's turns), "instructions": "TEXT" or
  "instructionsFile": "F" (the system prompt of its job and scheduled turns).
Relative paths are read from the agents file's folder.`;

/**
 * Reads `serve --agents FILE`: a JSON object mapping each agent id to its sidecar, either
 * `{"address": "HOST:PORT", "tokenFile": "F", "caFile": "F", "enableBrain": true}` (a sidecar that
 * runs already, over TLS with `caFile`) or `{"workspace": "DIR", "stateDir": "DIR", "sandbox":
 * "off|read-only|workspace-write", "user": "UID[:GID]", "mcpServers": "FILE", "tools": [...],
 * "network": "...", "webFetch": true, "brain": "DIR", "skills": "DIR", "hide": [...], "limits": "memory=2G,pids=512"}` (one to start
 * over that workspace, with the sidecar's flags of those names; as that user when `user` is given,
 * and then `stateDir` is required, a folder that user can write; `limits` is its `--limits`, what
 * the agent's processes may use together). Either takes `enabledSkills`,
 * `instructions` or `instructionsFile` (`AGENTS_FILE_KEYS`). Relative paths are read from the
 * file's folder.
 *
 * @throws ToolRuntimeError `invalid_request` with a one-line reason: unreadable file, not JSON, an
 *   entry of neither shape, a bad agent id, `user` without `stateDir`, no agents or more than MAX_AGENTS.
 */
export async function readAgentsFile(path: string): Promise<Map<string, AgentSidecarEntry>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', `cannot read the agents file ${path}: ${errorMessage(error)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', `the agents file ${path} is not JSON: ${errorMessage(error)}`);
  }
  const parsed = file.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length > 0 ? issue.path.join('.') : 'the top level';
    throw new ToolRuntimeError(
      'invalid_request',
      `the agents file ${path} is wrong at ${where}: ${issue.message}. Expected {"AGENT_ID": {"address": "HOST:PORT", ...} or {"workspace": "DIR", ...}, ...} (serve --help lists the keys)`,
    );
  }
  const ids = Object.keys(parsed.data);
  const badId = ids.find((id) => !AGENT_ID.test(id));
  if (badId !== undefined) {
    throw new ToolRuntimeError('invalid_request', `the agents file ${path} names agent "${badId}": an agent id is 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit`);
  }
  if (ids.length === 0) throw new ToolRuntimeError('invalid_request', `the agents file ${path} names no agent`);
  if (ids.length > MAX_AGENTS) throw new ToolRuntimeError('invalid_request', `the agents file ${path} names ${ids.length} agents; at most ${MAX_AGENTS}`);
  const base = dirname(resolve(path));
  const agents = new Map<string, AgentSidecarEntry>();
  for (const [id, value] of Object.entries(parsed.data)) {
    if ('user' in value && value.user !== undefined && !value.stateDir) {
      throw new ToolRuntimeError('invalid_request', `the agents file ${path} gives agent "${id}" a user but no stateDir: give a folder that user can write (its home folder may not be)`);
    }
    const user = 'user' in value && value.user !== undefined ? parseUser(value.user) : undefined;
    if (value.instructions !== undefined && value.instructionsFile !== undefined) {
      throw new ToolRuntimeError('invalid_request', `the agents file ${path} gives agent "${id}" both instructions and instructionsFile: choose one`);
    }
    let instructions = value.instructions;
    if (value.instructionsFile !== undefined) {
      const file = resolve(base, value.instructionsFile);
      try {
        instructions = await readFile(file, 'utf8');
      } catch (error) {
        throw new ToolRuntimeError('invalid_request', `the agents file ${path} gives agent "${id}" the instructionsFile ${file}, which cannot be read: ${errorMessage(error)}`);
      }
    }
    const brainOn = 'address' in value ? value.enableBrain === true : value.brain !== undefined;
    const turn: AgentTurnSettings = {
      turnFeatures: { ...(brainOn ? { brainEnabled: true } : {}), ...(value.enabledSkills ? { enabledSkills: value.enabledSkills } : {}) },
      ...(instructions !== undefined && instructions.trim() !== '' ? { instructions } : {}),
    };
    // A tool module given as a path is read from the agents file's folder, a package name as is.
    const toolModule = (module: string) => (module.startsWith('.') ? resolve(base, module) : module);
    agents.set(
      id,
      'address' in value
        ? { ...turn, kind: 'address', address: value.address, ...(value.tokenFile ? { tokenFile: resolve(base, value.tokenFile) } : {}), ...(value.caFile ? { caFile: resolve(base, value.caFile) } : {}) }
        : {
            ...turn,
            kind: 'workspace',
            workspace: resolve(base, value.workspace),
            ...(value.stateDir ? { stateDir: resolve(base, value.stateDir) } : {}),
            ...(value.sandbox ? { sandbox: value.sandbox } : {}),
            ...(user ? { user } : {}),
            ...(value.mcpServers ? { mcpServers: resolve(base, value.mcpServers) } : {}),
            ...(value.limits ? { limits: value.limits } : {}),
            features: {
              ...(value.tools ? { tools: value.tools.map(toolModule) } : {}),
              ...(value.network !== undefined ? { network: value.network } : {}),
              ...(value.webFetch ? { webFetch: true } : {}),
              ...(value.brain !== undefined ? { brain: resolve(base, value.brain) } : {}),
              ...(value.skills !== undefined ? { skills: resolve(base, value.skills) } : {}),
              ...(value.hide ? { hide: value.hide.map((hidden) => resolve(base, hidden)) } : {}),
            },
          },
    );
  }
  return agents;
}

/** `UID` or `UID:GID` (the group defaults to the uid's number, as `chown 1001` users expect). */
function parseUser(text: string): { uid: number; gid: number } {
  const [uid, gid] = text.split(':');
  return { uid: Number(uid), gid: Number(gid ?? uid) };
}
