import http from 'node:http';
import https from 'node:https';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Readable } from 'node:stream';
import { ToolRuntimeError } from '../../../src/index.js';
import { checkLiteralHost, createGuardedLookup } from './address-guard.js';

/** A response body read within the limits. */
export interface HttpGetResponse {
  /** The URL after redirects. */
  url: string;
  status: number;
  contentType: string;
  body: Buffer;
  /** True when the body was cut at `maxBytes`. */
  truncated: boolean;
  redirects: number;
}

export interface HttpGetOptions {
  url: string;
  headers?: Record<string, string>;
  signal: AbortSignal;
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  allowPrivateNetwork: boolean;
  /** Which addresses count as private; isPrivateAddress by default (tests narrow it). */
  isBlocked?: (address: string) => boolean;
}

function parseHttpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ToolRuntimeError('invalid_arguments', `${JSON.stringify(raw)} is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ToolRuntimeError('invalid_arguments', `only http and https URLs can be fetched, not ${url.protocol}`);
  }
  if (url.username || url.password) throw new ToolRuntimeError('invalid_arguments', 'URLs with credentials are not fetched');
  return url;
}

function decoded(response: http.IncomingMessage): Readable {
  switch ((response.headers['content-encoding'] ?? '').toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return response.pipe(createGunzip());
    case 'deflate':
      return response.pipe(createInflate());
    case 'br':
      return response.pipe(createBrotliDecompress());
    default:
      return response;
  }
}

function requestOnce(url: URL, options: HttpGetOptions, signal: AbortSignal): Promise<{ response: http.IncomingMessage }> {
  checkLiteralHost(url.hostname, options.allowPrivateNetwork, options.isBlocked);
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = transport.request(url, {
      method: 'GET',
      headers: { 'accept-encoding': 'gzip, deflate, br', ...options.headers },
      lookup: createGuardedLookup(options.allowPrivateNetwork, options.isBlocked) as never,
      signal,
    });
    request.on('response', (response) => resolve({ response }));
    request.on('error', reject);
    request.end();
  });
}

/**
 * GETs a URL with node:http/https: http and https only, every hop's address checked (after DNS,
 * through the guarded lookup, and IP literals directly) unless `allowPrivateNetwork`, at most
 * `maxRedirects` redirects, the body cut at `maxBytes` (after decompression), the whole exchange
 * bounded by `timeoutMs` and `signal`.
 *
 * @throws ToolRuntimeError `invalid_arguments` for a bad or non-http URL, `tool_failed` for a
 *   refused address, too many redirects or a network error, `timeout` past `timeoutMs`, `aborted`
 *   when `signal` fires.
 */
export async function httpGet(options: HttpGetOptions): Promise<HttpGetResponse> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout]);
  let url = parseHttpUrl(options.url);
  try {
    for (let redirects = 0; ; redirects++) {
      const { response } = await requestOnce(url, options, signal);
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (status >= 300 && status < 400 && location) {
        response.resume();
        if (redirects >= options.maxRedirects) throw new ToolRuntimeError('tool_failed', `too many redirects (more than ${options.maxRedirects})`);
        url = parseHttpUrl(new URL(location, url).toString());
        continue;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      const body = decoded(response);
      for await (const chunk of body) {
        const buffer = chunk as Buffer;
        const room = options.maxBytes - size;
        if (buffer.length > room) {
          chunks.push(buffer.subarray(0, room));
          size += room;
          truncated = true;
          break;
        }
        chunks.push(buffer);
        size += buffer.length;
      }
      if (truncated) response.destroy();
      return { url: url.toString(), status, contentType: String(response.headers['content-type'] ?? ''), body: Buffer.concat(chunks), truncated, redirects };
    }
  } catch (error) {
    if (error instanceof ToolRuntimeError) throw error;
    if (options.signal.aborted) throw new ToolRuntimeError('aborted', `fetching ${url} was aborted`, { cause: error });
    if (timeout.aborted) throw new ToolRuntimeError('timeout', `fetching ${url} took longer than ${options.timeoutMs} ms`, { cause: error });
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof ToolRuntimeError) throw cause;
    throw new ToolRuntimeError('tool_failed', `fetching ${url} failed: ${(error as Error).message}`, { cause: error });
  }
}
