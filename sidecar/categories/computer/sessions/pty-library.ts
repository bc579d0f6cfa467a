import type * as NodePty from '@lydell/node-pty';
import { ToolRuntimeError } from '../../../../src/index.js';
import { loadOnFirstUse } from '../../../../src/load-on-first-use.js';

/** A process in a pseudo-terminal, as the PTY library gives it. */
export type PtyProcess = NodePty.IPty;

/**
 * The PTY library: `@lydell/node-pty`, node-pty with its prebuilt N-API binary shipped inside the
 * npm registry's tarball of a per-platform package (`@lydell/node-pty-linux-x64`, ...), so `npm ci`
 * downloads nothing from elsewhere and compiles nothing. (node-pty itself builds with node-gyp,
 * which fetches Node's headers from nodejs.org unless they are installed.) N-API: one binary for
 * every Node version. Loaded on the first terminal session only, so start-up does not pay for it.
 */
const loadLibrary = loadOnFirstUse<typeof NodePty>('@lydell/node-pty');

/**
 * The library, loaded on first use.
 *
 * @throws ToolRuntimeError `tool_failed` when it does not load on this machine (no prebuilt binary
 *   for the platform), saying that sessions without `tty` still work.
 */
export async function loadPty(): Promise<typeof NodePty> {
  try {
    return loadLibrary();
  } catch (error) {
    throw new ToolRuntimeError(
      'tool_failed',
      `terminal sessions are unavailable on this machine: the PTY library @lydell/node-pty did not load (${error instanceof Error ? error.message : String(error)}). Start the command without tty: true (stdin is then a pipe).`,
      { cause: error },
    );
  }
}
