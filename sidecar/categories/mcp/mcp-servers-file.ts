import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { errorMessage, TOOL_NAME_PATTERN, ToolRuntimeError } from '../../../src/index.js';

/** One MCP server an agent's text turns mount, as the operator declared it. */
export type McpServerSpec = {
  /** The server's name: its tools' namespace (`^[a-zA-Z0-9_-]{1,64}$`). */
  name: string;
  /** Shown with the namespace to the model (and tool search). */
  description: string;
  /** The operator vouches for the server's annotations (read-only, destructive); untrusted: every tool counts as destructive. */
  trusted: boolean;
  /** A call's bound, in milliseconds, reset by each progress notification. */
  timeoutMs: number;
} & (
  | { transport: 'stdio'; command: string; args: string[]; env: Record<string, string>; cwd?: string }
  | {
      transport: 'http';
      url: string;
      headers: Record<string, string>;
      /** The header files read (absolute): hidden from the sandbox like the sidecar's other secrets. */
      secretFiles?: string[];
    }
);

const common = {
  description: z.string().max(1_000).optional(),
  trusted: z.boolean().optional(),
  timeoutMs: z.number().int().positive().max(24 * 3_600_000).optional(),
};
const headerFile = z.union([z.string().min(1), z.strictObject({ file: z.string().min(1), prefix: z.string().max(100).optional() })]);
const entry = z.union([
  z.strictObject({
    ...common,
    command: z.string().min(1),
    args: z.array(z.string()).max(1_000).optional(),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().min(1).optional(),
  }),
  z.strictObject({
    ...common,
    url: z.url({ protocol: /^https?$/ }),
    headers: z.record(z.string(), z.string()).optional(),
    headerFiles: z.record(z.string(), headerFile).optional(),
  }),
]);
const file = z.strictObject({ mcpServers: z.record(z.string(), entry) });

/** The most servers one agent mounts. */
export const MAX_MCP_SERVERS = 64;

/**
 * Reads `--mcp-servers FILE`: `{"mcpServers": {"NAME": {"command": "...", "args": [...], "env":
 * {...}, "cwd": "..."} | {"url": "https://...", "headers": {...}, "headerFiles": {"Authorization":
 * {"file": "token", "prefix": "Bearer "}}}, ...}}`, each with optional `description`, `trusted`
 * (default false) and `timeoutMs` (default 60000). Relative paths (cwd, header files) are read from
 * the file's folder; a header file's first line is the value (after `prefix`).
 *
 * @throws ToolRuntimeError `invalid_request` with a one-line reason: unreadable file or header
 *   file, not JSON, a wrong entry, a name that cannot be a namespace, too many servers.
 */
export function readMcpServersFile(path: string): McpServerSpec[] {
  const fail = (message: string) => new ToolRuntimeError('invalid_request', `--mcp-servers ${path}: ${message}`);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw fail(`cannot read it as JSON: ${errorMessage(error)}`);
  }
  const parsed = file.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw fail(
      `wrong at ${issue.path.join('.') || 'the top level'}: ${issue.message}. Expected {"mcpServers": {"NAME": {"command": "...", "args": [...]} or {"url": "https://..."}}}`,
    );
  }
  const base = dirname(resolve(path));
  const entries = Object.entries(parsed.data.mcpServers);
  if (entries.length > MAX_MCP_SERVERS) throw fail(`${entries.length} servers; at most ${MAX_MCP_SERVERS}`);
  return entries.map(([name, value]): McpServerSpec => {
    if (!TOOL_NAME_PATTERN.test(name)) throw fail(`the server name ${JSON.stringify(name)} becomes its tools' namespace: use 1-64 letters, digits, "_" or "-"`);
    const shared = { name, description: value.description ?? `Tools of the MCP server "${name}".`, trusted: value.trusted ?? false, timeoutMs: value.timeoutMs ?? 60_000 };
    if ('command' in value) {
      return { ...shared, transport: 'stdio', command: value.command, args: value.args ?? [], env: value.env ?? {}, ...(value.cwd ? { cwd: resolve(base, value.cwd) } : {}) };
    }
    const headers = { ...value.headers };
    const secretFiles: string[] = [];
    for (const [header, source] of Object.entries(value.headerFiles ?? {})) {
      const { file: from, prefix = '' } = typeof source === 'string' ? { file: source } : source;
      let text: string;
      try {
        secretFiles.push(resolve(base, from));
        text = readFileSync(resolve(base, from), 'utf8').split('\n')[0]!.trim();
      } catch (error) {
        throw fail(`server ${name}: cannot read the ${header} header file ${from}: ${errorMessage(error)}`);
      }
      if (text === '') throw fail(`server ${name}: the ${header} header file ${from} is empty`);
      headers[header] = `${prefix}${text}`;
    }
    return { ...shared, transport: 'http', url: value.url, headers, ...(secretFiles.length > 0 ? { secretFiles } : {}) };
  });
}
