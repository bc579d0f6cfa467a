import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The controller's default `--data-dir`: `~/.local/state/tools-runtime/controller`, beside the
 * sidecars' per-workspace state folders (which are named by a 16-hex hash, so never `controller`).
 */
export function defaultDataDir(): string {
  return join(homedir(), '.local', 'state', 'tools-runtime', 'controller');
}
