import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { isLoopbackAddress } from '../../src/grpc-server/listen-address.js';

/** Options of `consoleGuard`. */
export interface ConsoleGuardOptions {
  /** The port the console listens on: the Host header must name it. */
  port: number;
  /** The host it listens on. */
  host: string;
  /** Every /api request needs `authorization: Bearer <token>`, loopback included. */
  token: string;
}

const loopbackNames = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The console's request checks, before any route:
 * - Host must be the console's own (a loopback name with its port, or the bound host): a page of
 *   another site that rebinds its DNS name to 127.0.0.1 is refused. Bound beyond loopback any Host
 *   is let through to the token check.
 * - A request from another origin is refused: an `Origin` that is not `http://<Host>`, or a
 *   `Sec-Fetch-Site` other than `same-origin` / `none`. No CORS header is ever sent.
 * - Actions (POST) need `content-type: application/json`, which a cross-site form cannot send.
 * - /api (state, live events, actions) needs `authorization: Bearer <token>` (compared in constant
 *   time) on every address: a local process (the agent's own commands among them) is no browser,
 *   so the checks above do not stop it; only the token does. The page itself (`/`, `/page/*`)
 *   loads without it and asks for it.
 * Refusals are 403 (401 for a missing or wrong token) with a one-line JSON `error`.
 */
export function consoleGuard(options: ConsoleGuardOptions): MiddlewareHandler {
  const hostPort = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  const allowedHosts = new Set([...[...loopbackNames].map((name) => `${name}:${options.port}`), `${hostPort}:${options.port}`]);
  // Compared as SHA-256 digests in constant time, so neither the token nor its length leaks.
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const expected = digest(`Bearer ${options.token}`);
  // Beyond loopback the console is reached by names it cannot know; the token, which a rebinding
  // page never has, stands in for the Host check there.
  const anyHost = !isLoopbackAddress(`${hostPort}:${options.port}`);
  return async (c, next) => {
    const host = c.req.header('host') ?? '';
    if (!anyHost && !allowedHosts.has(host.toLowerCase())) return c.json({ error: `refused: Host "${host}" is not this console's address` }, 403);
    const origin = c.req.header('origin');
    if (origin !== undefined && origin !== `http://${host}`) return c.json({ error: `refused: cross-origin request from ${origin}` }, 403);
    const site = c.req.header('sec-fetch-site');
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return c.json({ error: `refused: cross-site request (Sec-Fetch-Site: ${site})` }, 403);
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && !(c.req.header('content-type') ?? '').startsWith('application/json')) {
      return c.json({ error: 'refused: actions need content-type application/json' }, 403);
    }
    if (c.req.path.startsWith('/api/')) {
      const given = c.req.header('authorization') ?? '';
      if (given === '' || !timingSafeEqual(digest(given), expected)) return c.json({ error: 'this console needs its token (authorization: Bearer …)' }, 401);
    }
    await next();
    c.header('x-content-type-options', 'nosniff');
    c.header('x-frame-options', 'DENY');
    c.header('referrer-policy', 'no-referrer');
    c.header('content-security-policy', "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    return undefined;
  };
}
