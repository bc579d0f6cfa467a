import { ToolRuntimeError } from '../../../src/index.js';
import type { WebSearchProfile } from './web-profiles.js';
import { httpGet } from './http-get.js';

/** One search hit. */
export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

/** Brave Search's web endpoint, used when the profile's URL is empty. */
export const BRAVE_DEFAULT_URL = 'https://api.search.brave.com/res/v1/web/search';

const text = (value: unknown) => (typeof value === 'string' ? value.replace(/<[^>]+>/g, '').trim() : '');

/**
 * Searches through the configured provider: a SearXNG instance's JSON API
 * (`<url>/search?q=...&format=json`) or the Brave Search API (`X-Subscription-Token`). Returns at
 * most `count` results.
 *
 * @throws ToolRuntimeError `tool_failed` on an HTTP error or an answer of the wrong shape;
 *   `timeout` / `aborted` as httpGet.
 */
export async function searchWeb(options: { profile: WebSearchProfile; query: string; count: number; signal: AbortSignal }): Promise<SearchResult[]> {
  const { profile, query, count } = options;
  let url: URL;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (profile.provider === 'searxng') {
    url = new URL('search', profile.url.endsWith('/') ? profile.url : `${profile.url}/`);
    url.searchParams.set('q', query);
    url.searchParams.set('format', 'json');
  } else {
    url = new URL(profile.url || BRAVE_DEFAULT_URL);
    url.searchParams.set('q', query);
    url.searchParams.set('count', String(Math.min(count, 20)));
    if (!profile.apiKey) throw new ToolRuntimeError('tool_failed', 'the Brave search profile has no API key');
    headers['x-subscription-token'] = profile.apiKey;
  }
  const response = await httpGet({
    url: url.toString(),
    headers,
    signal: options.signal,
    timeoutMs: profile.timeoutMs,
    maxBytes: 4 * 1024 * 1024,
    maxRedirects: 3,
    allowPrivateNetwork: profile.allowPrivateNetwork,
  });
  if (response.status !== 200) {
    throw new ToolRuntimeError('tool_failed', `the ${profile.provider} search provider answered HTTP ${response.status}: ${response.body.toString('utf8').slice(0, 300)}`);
  }
  let payload: unknown;
  try {
    payload = JSON.parse(response.body.toString('utf8'));
  } catch {
    throw new ToolRuntimeError('tool_failed', `the ${profile.provider} search provider did not answer JSON`);
  }
  const raw =
    profile.provider === 'searxng'
      ? (payload as { results?: unknown }).results
      : (payload as { web?: { results?: unknown } }).web?.results ?? [];
  if (!Array.isArray(raw)) throw new ToolRuntimeError('tool_failed', `the ${profile.provider} answer has no result list`);
  return raw
    .map((item: Record<string, unknown>) => ({
      title: text(item.title),
      url: text(item.url),
      snippet: text(profile.provider === 'searxng' ? item.content : item.description),
    }))
    .filter((item) => item.url !== '')
    .slice(0, count);
}
