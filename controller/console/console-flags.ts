import { checkHostPort } from '../../src/cli-usage.js';
import { ToolRuntimeError } from '../../src/errors.js';
import { readTokenFile } from '../control-plane/grpc/control-token.js';

/** The console's flags, as `npm start` and `serve` take them. */
export interface ConsoleFlags {
  /** `host:port` (default 127.0.0.1:7401). */
  address: string;
  /** A file whose first line is the console's token. */
  tokenFile?: string;
}

/** Where the console listens when `--console` has no address. */
export const DEFAULT_CONSOLE_ADDRESS = '127.0.0.1:7401';

/** The flags' help lines, for the README and usage texts. */
export const CONSOLE_USAGE = `  --console [HOST:PORT]      serve the web console (default ${DEFAULT_CONSOLE_ADDRESS}); its API always needs a token
  --console-token-file FILE  the console's token (first line of FILE); without it one is generated at start,
                             written 0600 to DATA_DIR/tokens/console-HOST_PORT.token, and the console's
                             address is printed once with it (http://HOST:PORT/#token=...)`;

/**
 * The address that opens the console signed in: the token rides in the fragment, which the browser
 * never sends to the server (so no request line, log or Referer carries it); the page moves it to
 * its storage and removes it from the address bar. Print it once; log `url` elsewhere.
 */
export function consoleLinkWithToken(url: string, token: string): string {
  return `${url}#token=${encodeURIComponent(token)}`;
}

/**
 * Takes `--console [ADDR]` and `--console-token-file FILE` (also in `--flag=value` form) out of
 * `argv`, so that the command's own parser never sees them. `--console` takes the next argument as
 * its address unless that is another flag.
 *
 * @throws ToolRuntimeError `invalid_request` for `--console-token-file` without a value, or without `--console`.
 */
export function takeConsoleFlags(argv: string[]): { argv: string[]; console?: ConsoleFlags } {
  const rest: string[] = [];
  let address: string | undefined;
  let tokenFile: string | undefined;
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index]!;
    if (arg === '--console' || arg.startsWith('--console=')) {
      const inline = arg.startsWith('--console=') ? arg.slice('--console='.length) : undefined;
      const next = argv[index + 1];
      address = inline ?? (next !== undefined && !next.startsWith('-') ? (index += 1, next) : DEFAULT_CONSOLE_ADDRESS);
    } else if (arg === '--console-token-file' || arg.startsWith('--console-token-file=')) {
      tokenFile = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++index];
      if (!tokenFile) throw new ToolRuntimeError('invalid_request', '--console-token-file needs a value');
    } else {
      rest.push(arg);
    }
  }
  if (tokenFile !== undefined && address === undefined) throw new ToolRuntimeError('invalid_request', '--console-token-file needs --console');
  if (address !== undefined) checkHostPort(address, '--console', { example: '127.0.0.1:7402' });
  return { argv: rest, ...(address !== undefined ? { console: { address, ...(tokenFile ? { tokenFile } : {}) } } : {}) };
}

/**
 * Reads a token file's first line.
 *
 * @throws ToolRuntimeError `invalid_request` when the file cannot be read or its first line is empty.
 */
export function readConsoleToken(path: string): Promise<string> {
  return readTokenFile(path, 'console token file');
}
