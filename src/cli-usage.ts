import { createServer } from 'node:net';
import { ToolRuntimeError } from './errors.js';

/**
 * The message of a `node:util` parseArgs error, as a user of `npm start -- ...` should read it.
 * Node's advice for an unknown option (put it "after '--'") means nothing under npm, where `--`
 * already separates npm's flags from ours, and its quotes are unbalanced; it is left out.
 */
export function parseArgsMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const unknown = /^Unknown option '([^']*)'/.exec(message);
  if (unknown) return `unknown option ${unknown[1]}`;
  // "Option '--x <value>' argument missing" and the like: keep the first sentence, without Node's advice.
  return message.split('. To specify')[0]!.replace(/\.$/, '');
}

/**
 * Checks a `HOST:PORT` (or `[v6]:PORT`, or with `unix` `unix:/path`) address a flag names. grpc-js
 * takes a bare host as port 443 and Node's HTTP servers take it as a path, so a missing port is
 * refused here with the fix, not discovered later as a strange bind or dial.
 *
 * @throws ToolRuntimeError `invalid_request` naming the flag, the value and an example.
 */
export function checkHostPort(value: string, flag: string, options: { unix?: boolean; example?: string } = {}): string {
  if (options.unix && (value.startsWith('unix:') || value.startsWith('unix-abstract:'))) return value;
  const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(value);
  if (match && Number(match[2]) <= 65_535) return value;
  const example = options.example ?? '127.0.0.1:7400';
  const forms = options.unix ? `HOST:PORT, [IPv6]:PORT or unix:/path` : 'HOST:PORT';
  const hint = /^[^\s:[\]]+$/.test(value) || /^\[[^\]]*\]$/.test(value) ? ` (the port is missing: ${value}:PORT; port 0 picks any free port)` : '';
  throw new ToolRuntimeError('invalid_request', `${flag} takes ${forms}, for example ${example}; not "${value}"${hint}`);
}

/**
 * Whether a TCP `host:port` (port not 0) is in use, found by trying to listen there (closed at
 * once). grpc-js reports a failed bind only as "No address added out of total 1 resolved": this
 * finds the usual reason. Never throws; false when the probe itself cannot tell.
 */
export async function isPortInUse(address: string): Promise<boolean> {
  const match = /^\[?([^\]]*?)\]?:(\d+)$/.exec(address);
  if (!match || Number(match[2]) === 0) return false;
  const [, host, port] = match;
  return new Promise<boolean>((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRINUSE'));
    probe.listen({ host: host === 'localhost' ? '127.0.0.1' : host, port: Number(port), exclusive: true }, () => probe.close(() => resolve(false)));
  });
}

/** The message for a listen address whose bind failed: "port N is in use" when it is, else grpc-js's own. */
export async function bindFailureMessage(address: string, flag: string, error: unknown): Promise<string> {
  if (await isPortInUse(address)) {
    const port = /:(\d+)$/.exec(address)![1];
    return `port ${port} is in use (${address}): another process listens there; stop it, or choose another ${flag} port (0 picks a free one)`;
  }
  return `cannot listen on ${address}: ${error instanceof Error ? error.message : String(error)}`;
}
