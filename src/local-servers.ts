import { randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

// One well-known folder per user where every running server of this project (a sidecar, the control
// plane's `serve`) says where it listens and which file holds its token, as Jupyter's runtime folder
// lets `jupyter server list` find servers. A local client (the controller, the operator's CLI, a test)
// then finds any server's token by its address, whatever --data-dir or --state-dir it was given.
// Synchronous on purpose: the folder holds a few small files, and the exit handler that removes an
// entry cannot wait.

/** Overrides the runtime folder (tests, or an operator who wants it elsewhere). */
export const RUNTIME_DIR_ENV = 'TOOLS_RUNTIME_RUNTIME_DIR';

/** Which kind of server an entry is. */
export type LocalServerKind = 'sidecar' | 'control-plane';

/** What a running server wrote about itself. */
export interface LocalServer {
  kind: LocalServerKind;
  /** The address it listens on, as it printed it (`127.0.0.1:PORT`, `unix:/path`). */
  address: string;
  /** The file holding its bearer token (0600), when it requires one. */
  tokenFile?: string;
  pid: number;
  /** ISO time of the start. */
  startedAt: string;
  /** The sidecar's workspace, the control plane's data folder: to tell servers apart in a list. */
  workspace?: string;
  dataDir?: string;
  /** The sidecar's MCP endpoint, when it serves one. */
  mcpUrl?: string;
  /** The entry's own file. */
  entryFile: string;
}

/**
 * The runtime folder: `$TOOLS_RUNTIME_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/tools-runtime` when that
 * folder exists (a per-user tmpfs that the session's end empties), else
 * `~/.local/state/tools-runtime/runtime`.
 */
export function localServersDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env[RUNTIME_DIR_ENV]) return resolve(env[RUNTIME_DIR_ENV]);
  // Only an existing one: a login session's variable inherited where that folder is gone (a container,
  // sudo) must not make every server fail to write its token.
  if (env.XDG_RUNTIME_DIR && statSync(env.XDG_RUNTIME_DIR, { throwIfNoEntry: false })?.isDirectory()) return join(env.XDG_RUNTIME_DIR, 'tools-runtime');
  return join(env.HOME || homedir(), '.local', 'state', 'tools-runtime', 'runtime');
}

/**
 * Creates the runtime folder 0700 (narrowing an existing one of this user's) and refuses one that
 * is a symlink or another user's: a folder someone else controls could hand out or collect tokens.
 *
 * @throws Error naming the folder and why.
 */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const info = lstatSync(dir);
  const uid = process.getuid?.();
  if (!info.isDirectory()) throw new Error(`${dir} is not a folder (a symlink is refused)`);
  if (uid !== undefined && info.uid !== uid) throw new Error(`${dir} belongs to uid ${info.uid}, not this user (${uid})`);
  if ((info.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** Writes `text` to `path` 0600 under a temporary name, then renames it: a reader never sees half. */
function writePrivate(path: string, text: string): void {
  const temporary = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600, flag: 'wx' });
  renameSync(temporary, path);
}

/** A server's entry while it runs; `remove()` deletes it (and the token file it wrote). */
export interface LocalServerRegistration {
  /** The token file: the one given, or the one written for a generated token. */
  tokenFile?: string;
  entryFile: string;
  /** Deletes the entry and a token file it wrote. Idempotent, never throws; also runs at process exit. */
  remove(): void;
}

/**
 * Writes this process's entry to the runtime folder: `<kind>-<pid>-<random>.json` (0600), and,
 * with `token` (a token the server generated, so no file holds it yet), `<same>.token` (0600).
 * Both are removed by `remove()` or when the process exits.
 *
 * @throws Error when the folder is not private to this user or cannot be written: a server that
 *   generated its token must fail closed rather than serve with a token nobody can find.
 */
export function registerLocalServer(
  server: Omit<LocalServer, 'pid' | 'startedAt' | 'entryFile' | 'tokenFile'> & { token?: string; tokenFile?: string },
  env: NodeJS.ProcessEnv = process.env,
): LocalServerRegistration {
  const dir = localServersDir(env);
  ensurePrivateDir(dir);
  const base = join(dir, `${server.kind}-${process.pid}-${randomBytes(4).toString('hex')}`);
  const written: string[] = [];
  let tokenFile = server.tokenFile !== undefined ? resolve(server.tokenFile) : undefined;
  if (server.token !== undefined) {
    tokenFile = `${base}.token`;
    writePrivate(tokenFile, `${server.token}\n`);
    written.push(tokenFile);
  }
  const { token: _token, ...rest } = server;
  const entry: Omit<LocalServer, 'entryFile'> = { ...rest, ...(tokenFile ? { tokenFile } : {}), pid: process.pid, startedAt: new Date().toISOString() };
  writePrivate(`${base}.json`, `${JSON.stringify(entry)}\n`);
  written.push(`${base}.json`);
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    process.off('exit', remove);
    for (const file of written) {
      try {
        unlinkSync(file);
      } catch {
        // gone already
      }
    }
  };
  process.once('exit', remove);
  return { ...(tokenFile ? { tokenFile } : {}), entryFile: `${base}.json`, remove };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * The servers whose entries are in the runtime folder and whose process still runs, oldest first.
 * Entries of processes that died without removing them (SIGKILL) are skipped and deleted.
 * Never throws: an unreadable folder or entry is no server.
 */
export function listLocalServers(options: { kind?: LocalServerKind; env?: NodeJS.ProcessEnv } = {}): LocalServer[] {
  const dir = localServersDir(options.env);
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith('.json'));
  } catch {
    return [];
  }
  const servers: LocalServer[] = [];
  for (const name of names) {
    const entryFile = join(dir, name);
    let entry: LocalServer;
    try {
      entry = { ...(JSON.parse(readFileSync(entryFile, 'utf8')) as LocalServer), entryFile };
    } catch {
      continue;
    }
    if (typeof entry.pid !== 'number' || typeof entry.address !== 'string') continue;
    if (!alive(entry.pid)) {
      for (const file of [entryFile, entryFile.replace(/\.json$/, '.token')]) {
        try {
          unlinkSync(file);
        } catch {
          // not ours to remove, or gone
        }
      }
      continue;
    }
    if (options.kind === undefined || entry.kind === options.kind) servers.push(entry);
  }
  return servers.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}

/**
 * An address in one spelling, so `localhost:7401`, `127.0.0.1:7401` and `[::1]:7401` compare
 * equal (one loopback), `dns:` dropped, a unix socket's path made absolute.
 */
export function normalizeServerAddress(address: string): string {
  const text = address.trim().replace(/^dns:(\/\/[^/]*\/)?/, '');
  if (text.startsWith('unix:')) return `unix:${resolve(text.slice('unix:'.length).replace(/^\/\/(?=\/)/, ''))}`;
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(text);
  if (!match) return text.toLowerCase();
  const host = (match[1] ?? match[2] ?? '').toLowerCase();
  const loopback = host === 'localhost' || host === '::1' || host === '0:0:0:0:0:0:0:1' || /^127\./.test(host);
  return `${loopback ? 'loopback' : host}:${match[3]}`;
}

/** The newest running server listening on `address` (any spelling of it), if any. */
export function findLocalServer(address: string, options: { kind?: LocalServerKind; env?: NodeJS.ProcessEnv } = {}): LocalServer | undefined {
  const wanted = normalizeServerAddress(address);
  return listLocalServers(options).filter((server) => normalizeServerAddress(server.address) === wanted).at(-1);
}

/**
 * The token of the local server on `address`, read from the file its entry names: what a client
 * sends when it was given no token. Undefined when no running server registered that address,
 * it requires no token, or its token file cannot be read (a spawner that keeps the token to itself
 * deletes the file once the server listens).
 */
export function findLocalServerToken(address: string, options: { kind?: LocalServerKind; env?: NodeJS.ProcessEnv } = {}): string | undefined {
  const server = findLocalServer(address, options);
  if (!server?.tokenFile) return undefined;
  try {
    return readFileSync(server.tokenFile, 'utf8').split('\n')[0]?.trim() || undefined;
  } catch {
    return undefined;
  }
}
