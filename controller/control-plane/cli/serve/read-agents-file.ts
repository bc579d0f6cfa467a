import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { errorMessage, ToolRuntimeError } from '../../../../src/index.js';

/** Where one agent's sidecar is: a running one, or a workspace to start one over. */
export type AgentSidecarEntry =
  | { kind: 'address'; address: string; tokenFile?: string }
  | { kind: 'workspace'; workspace: string; stateDir?: string; sandbox?: 'off' | 'read-only' | 'workspace-write'; user?: { uid: number; gid: number }; mcpServers?: string; limits?: string };

/**
 * The most agents one `serve` process takes: a platform's fleet (the fleet simulation runs 1,000),
 * still a bound on what one file can make a controller hold.
 */
export const MAX_AGENTS = 10_000;

const AGENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const entry = z.union([
  z.strictObject({ address: z.string().min(1).max(512), tokenFile: z.string().min(1).max(4096).optional() }),
  z.strictObject({
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

/**
 * Reads `serve --agents FILE`: a JSON object mapping each agent id to its sidecar, either
 * `{"address": "HOST:PORT", "tokenFile": "F"}` (a sidecar that runs already) or
 * `{"workspace": "DIR", "stateDir": "DIR", "sandbox": "off|read-only|workspace-write", "user": "UID[:GID]", "mcpServers": "FILE", "limits": "memory=2G,pids=512"}`
 * (one to start over that workspace; `sandbox` is its `--sandbox`, the sidecar's default when
 * absent; as that user when `user` is given, and then `stateDir` is required, a folder that user
 * can write; `mcpServers` is its `--mcp-servers`, the MCP servers it mounts; `limits` is its
 * `--limits`, what the agent's processes may use together). Relative paths are
 * read from the file's folder.
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
      `the agents file ${path} is wrong at ${where}: ${issue.message}. Expected {"AGENT_ID": {"address": "HOST:PORT", "tokenFile": "F"} or {"workspace": "DIR"}, ...}`,
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
    agents.set(
      id,
      'address' in value
        ? { kind: 'address', address: value.address, ...(value.tokenFile ? { tokenFile: resolve(base, value.tokenFile) } : {}) }
        : {
            kind: 'workspace',
            workspace: resolve(base, value.workspace),
            ...(value.stateDir ? { stateDir: resolve(base, value.stateDir) } : {}),
            ...(value.sandbox ? { sandbox: value.sandbox } : {}),
            ...(user ? { user } : {}),
            ...(value.mcpServers ? { mcpServers: resolve(base, value.mcpServers) } : {}),
            ...(value.limits ? { limits: value.limits } : {}),
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
