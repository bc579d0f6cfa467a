import { createHash } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { errorMessage } from '../../../src/index.js';
import type { SandboxPolicy } from '../computer/sandbox/sandbox-policy.js';
import { startProcess } from '../computer/sandbox/start-process.js';
import type { SkillMcpServer } from './skill-catalog.js';

/** One tool an MCP server offers, as `mcporter list --json` reports it. */
export interface McpToolSummary {
  name: string;
  description: string;
  /** `key: type` of each parameter, required ones first, `?` on optional ones. */
  parameters: string[];
}

/** What listing a server's tools gave: its tools, or why it failed. */
export type McpListing = { ok: true; tools: McpToolSummary[] } | { ok: false; error: string };

/** mcporter's config entry for a skill's server. */
export function mcporterServerEntry(server: SkillMcpServer): Record<string, unknown> {
  return 'url' in server ? { baseUrl: server.url } : { command: server.command, args: server.args, ...(Object.keys(server.env).length ? { env: server.env } : {}) };
}

/** Writes `{ mcpServers, imports: [] }` (no editor imports) under `dir`, named by its content's hash. */
export async function writeMcporterConfig(dir: string, servers: Record<string, SkillMcpServer>): Promise<string> {
  const config = { mcpServers: Object.fromEntries(Object.entries(servers).map(([name, server]) => [name, mcporterServerEntry(server)])), imports: [] };
  const text = `${JSON.stringify(config, null, 2)}\n`;
  const file = path.join(dir, `mcporter-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.json`);
  await mkdir(dir, { recursive: true });
  const existing = await readFile(file, 'utf8').catch(() => undefined);
  if (existing !== text) await writeFile(file, text);
  return file;
}

/** Finds `node_modules/<name>/package.json` from this module's folder upwards (its `exports` hide it from require). */
async function findPackageJson(name: string): Promise<string> {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'node_modules', name, 'package.json');
    if (await readFile(candidate).then(() => true, () => false)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`the ${name} package is not installed`);
    dir = parent;
  }
}

/**
 * Writes `<dir>/bin/mcporter`, a shell wrapper that runs this project's mcporter CLI with this Node,
 * so run_command can call it by absolute path whatever PATH holds. Returns the wrapper's path.
 */
export async function installMcporterWrapper(dir: string): Promise<string> {
  const packageJson = await findPackageJson('mcporter');
  const manifest = JSON.parse(await readFile(packageJson, 'utf8')) as { bin?: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.mcporter;
  if (!bin) throw new Error('the mcporter package names no CLI entry');
  const cli = path.join(path.dirname(packageJson), bin);
  const wrapper = path.join(dir, 'bin', 'mcporter');
  await mkdir(path.dirname(wrapper), { recursive: true });
  await writeFile(wrapper, `#!/bin/sh\nexec '${process.execPath.replace(/'/g, `'\\''`)}' '${cli.replace(/'/g, `'\\''`)}' "$@"\n`);
  await chmod(wrapper, 0o755);
  return wrapper;
}

function summarize(tool: { name?: unknown; description?: unknown; inputSchema?: { properties?: Record<string, { type?: unknown }>; required?: unknown } }): McpToolSummary {
  const properties = tool.inputSchema?.properties ?? {};
  const required = new Set(Array.isArray(tool.inputSchema?.required) ? (tool.inputSchema.required as string[]) : []);
  const keys = Object.keys(properties).sort((a, b) => Number(required.has(b)) - Number(required.has(a)));
  return {
    name: String(tool.name),
    description: typeof tool.description === 'string' ? tool.description.split('\n')[0]!.trim() : '',
    parameters: keys.map((key) => `${key}${required.has(key) ? '' : '?'}: ${typeof properties[key]?.type === 'string' ? properties[key].type : 'any'}`),
  };
}

/**
 * Lists a server's tools with `mcporter --config <file> list <server> --json`, started like every
 * process for the model (startProcess, under `policy`: the server mcporter starts is the skill's
 * own program), bounded by `timeoutMs` and `signal` (the process group is killed). Never throws: a
 * failure, the sandbox's refusal included, is `{ ok: false, error }`.
 */
export async function listMcpTools(options: {
  mcporter: string;
  configPath: string;
  server: string;
  env: NodeJS.ProcessEnv;
  cwd: string;
  policy: SandboxPolicy;
  timeoutMs: number;
  signal: AbortSignal;
}): Promise<McpListing> {
  let started;
  try {
    started = await startProcess({
      argv: [options.mcporter, '--config', options.configPath, 'list', options.server, '--json'],
      cwd: options.cwd,
      env: { ...options.env, MCPORTER_LIST_TIMEOUT: String(options.timeoutMs) },
      policy: options.policy,
    });
  } catch (error) {
    return { ok: false, error: errorMessage(error) };
  }
  const { child } = started;
  const maxBytes = 8 * 1024 * 1024;
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    if (stdout.length < maxBytes) stdout += chunk;
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    if (stderr.length < 64 * 1024) stderr += chunk;
  });
  const stop = () => started.killGroup('SIGKILL');
  const timer = setTimeout(stop, options.timeoutMs + 2_000);
  options.signal.addEventListener('abort', stop, { once: true });
  const failure = await new Promise<string | undefined>((resolve) => {
    child.once('error', (error) => resolve(error.message));
    child.once('close', (code, signal) => resolve(code === 0 ? undefined : `mcporter exited with ${code ?? signal}`));
  });
  clearTimeout(timer);
  options.signal.removeEventListener('abort', stop);
  let payload: { status?: string; tools?: unknown[]; error?: unknown; issue?: { rawMessage?: unknown } } | undefined;
  try {
    payload = JSON.parse(stdout) as typeof payload;
  } catch {
    payload = undefined;
  }
  if (payload?.status === 'ok' && Array.isArray(payload.tools)) return { ok: true, tools: payload.tools.map((tool) => summarize(tool as never)) };
  const why = payload?.issue?.rawMessage ?? payload?.error ?? failure ?? '';
  const message = `${payload?.status ? `${payload.status}: ` : ''}${typeof why === 'string' ? why : JSON.stringify(why)}`;
  return { ok: false, error: (payload ? message : `${message} ${stderr.slice(0, 300)}`).trim() };
}
