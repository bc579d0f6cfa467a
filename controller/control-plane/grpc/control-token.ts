import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage, ToolRuntimeError } from '../../../src/errors.js';
import { findLocalServer, localServersDir } from '../../../src/local-servers.js';

/** Which endpoint a token file belongs to: ControlPlaneService (gRPC) or the web console. */
export type ControlEndpointKind = 'control-plane' | 'console';

/** A token a server requires, and the file it was written to when this process made it. */
export interface ControlToken {
  token: string;
  /** The file the token was read from (`--token-file`) or written to (generated). */
  file: string;
  /** True when this process generated the token (then `remove` deletes its file). */
  generated: boolean;
}

/** A fresh random token: 32 bytes from the CSPRNG, base64url (43 characters, safe in a URL fragment). */
export function generateControlToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The folder under a data folder that holds generated tokens (mode 0700). */
export function controlTokenDir(dataDir: string): string {
  return join(dataDir, 'tokens');
}

/**
 * Where a server that generated its token writes it, and where a local client looks for it:
 * `<dataDir>/tokens/<kind>-<address>.token`, the address with every character other than letters,
 * digits, `.` and `-` as `_` (`127.0.0.1:7400` → `control-plane-127.0.0.1_7400.token`). One file
 * per endpoint, so a `serve` and an `npm start -- --console` sharing a data folder never overwrite
 * each other's.
 */
export function controlTokenPath(options: { dataDir: string; kind: ControlEndpointKind; address: string }): string {
  return join(controlTokenDir(options.dataDir), `${options.kind}-${options.address.replace(/[^A-Za-z0-9.-]/g, '_')}.token`);
}

/**
 * Reads a token file: its first line, trimmed.
 *
 * @throws ToolRuntimeError `invalid_request` when the file cannot be read or its first line is empty.
 */
export async function readTokenFile(path: string, what = 'token file'): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', `cannot read the ${what} ${path}: ${errorMessage(error)}`);
  }
  const token = text.split('\n')[0]?.trim() ?? '';
  if (token === '') throw new ToolRuntimeError('invalid_request', `the ${what} ${path} is empty`);
  return token;
}

/**
 * Writes a generated token to `path` so only this user can read it: the parent folder is created
 * 0700 (an existing one owned by this user is narrowed to 0700), the file is written 0600 under a
 * temporary name and renamed into place, so a client never reads half a token.
 *
 * @throws ToolRuntimeError `invalid_request` when the folder belongs to another user, is a symlink,
 *   or the file cannot be written (fails closed: the server does not start without its file).
 */
export async function writeTokenFile(path: string, token: string): Promise<void> {
  const dir = join(path, '..');
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const info = await lstat(dir);
    const uid = process.getuid?.();
    if (!info.isDirectory()) throw new Error('it is not a folder (a symlink is refused)');
    if (uid !== undefined && info.uid !== uid) throw new Error(`it belongs to uid ${info.uid}, not this user (${uid})`);
    if ((info.mode & 0o077) !== 0) await chmod(dir, 0o700);
    const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temporary, `${token}\n`, { mode: 0o600, flag: 'wx' });
    await rename(temporary, path);
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', `cannot write the token file ${path}: ${errorMessage(error)}; give --token-file FILE (a file only you can read) instead`);
  }
}

/**
 * Makes the data folder private to this user: creates it 0700, or narrows an existing one of this
 * user's that others could enter. The store in it is the control plane's authority as much as the
 * token is (whoever can write it can decide an approval), so nobody else may reach it. Returns true
 * when it narrowed the folder's mode.
 *
 * @throws ToolRuntimeError `invalid_request` when the folder cannot be created or changed.
 */
export async function makeDataDirPrivate(dataDir: string): Promise<boolean> {
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    const info = await lstat(dataDir);
    const uid = process.getuid?.();
    if ((info.mode & 0o077) === 0 || (uid !== undefined && info.uid !== uid)) return false;
    await chmod(dataDir, info.mode & 0o700);
    return true;
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', `cannot make the data folder ${dataDir} private (0700): ${errorMessage(error)}`);
  }
}

/**
 * Deletes a generated token file if it still holds `token` (a later process on the same address
 * may have replaced it). Never throws.
 */
export async function removeTokenFile(path: string, token: string): Promise<void> {
  try {
    if ((await readFile(path, 'utf8')).split('\n')[0]?.trim() === token) await unlink(path);
  } catch {
    // gone already, or not ours to remove
  }
}

/**
 * The token a local client sends: `tokenFile`'s when given; else the token file named by the
 * running server that registered `address` in the runtime folder (src/local-servers.ts), whatever
 * data folder it was given; else the file a server on `address` generated under `dataDir` (see
 * `controlTokenPath`).
 *
 * @throws ToolRuntimeError `invalid_request` naming the ways to fix it when none can be read.
 */
export async function findControlToken(options: { tokenFile?: string; dataDir: string; kind: ControlEndpointKind; address: string }): Promise<string> {
  if (options.tokenFile) return readTokenFile(options.tokenFile);
  const listed = options.kind === 'control-plane' ? findLocalServer(options.address, { kind: 'control-plane' }) : undefined;
  if (listed?.tokenFile) return readTokenFile(listed.tokenFile, `token file of the server listed in ${localServersDir()}`);
  const path = controlTokenPath(options);
  try {
    return await readTokenFile(path);
  } catch (error) {
    throw new ToolRuntimeError(
      'invalid_request',
      `no token for ${options.address}: no running server lists that address in ${localServersDir()}, and ${errorMessage(error)}. ` +
        'give --data-dir DIR (the server\'s data folder) or --token-file FILE (the file the server was given)',
    );
  }
}
