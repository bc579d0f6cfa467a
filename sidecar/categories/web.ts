import { z } from 'zod';
import { defineWorkerTool, textResult, ToolRuntimeError, truncateMiddle, type WorkerAgentTool } from '../../src/index.js';
import type { WebFetchProfile, WebSearchProfile } from './web/web-profiles.js';
import { htmlToMarkdown } from './web/html-to-markdown.js';
import { httpGet } from './web/http-get.js';
import { searchWeb } from './web/search-providers.js';

/** Characters web_fetch returns when the model gives no max_chars. */
export const DEFAULT_FETCH_CHARS = 20_000;

const fetchSchema = z.object({
  url: z.string().min(1).describe('An http or https URL.'),
  max_chars: z.number().int().min(100).max(200_000).optional().describe(`Characters of content to return (default ${DEFAULT_FETCH_CHARS}).`),
});
const searchSchema = z.object({
  query: z.string().min(1).describe('What to search the web for.'),
  count: z.number().int().min(1).max(20).optional().describe('How many results (default 5).'),
});

function charsetOf(contentType: string): string {
  return /charset=["']?([\w-]+)/i.exec(contentType)?.[1] ?? 'utf-8';
}

function decodeBody(body: Buffer, contentType: string): string {
  try {
    return new TextDecoder(charsetOf(contentType)).decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

function createWebFetchTool(profile: WebFetchProfile): WorkerAgentTool {
  return defineWorkerTool({
    name: 'web_fetch',
    description: 'Fetch a web page (http or https) and return its content: HTML as readable markdown, text and JSON as they are. Long pages are cut; ask for more with max_chars.',
    schema: fetchSchema,
    executionMode: 'parallel',
    isReadOnly: true,
    describeActivity: (params) => `Fetching ${params.url}`,
    describeCompletedActivity: (params, result) => {
      const details = result.details as { status?: number; title?: string } | undefined;
      return details?.status ? `Fetched ${details.title || params.url} (HTTP ${details.status})` : `Fetched ${params.url}`;
    },
    async execute(params, context) {
      const response = await httpGet({
        url: params.url,
        headers: { 'user-agent': profile.userAgent, accept: 'text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.5' },
        signal: context.signal,
        timeoutMs: profile.timeoutMs,
        maxBytes: profile.maxBytes,
        maxRedirects: profile.maxRedirects,
        allowPrivateNetwork: profile.allowPrivateNetwork,
      });
      const type = response.contentType.split(';')[0]!.trim().toLowerCase();
      let title = '';
      let content: string;
      if (type === 'text/html' || type === 'application/xhtml+xml') {
        const page = htmlToMarkdown(decodeBody(response.body, response.contentType));
        title = page.title;
        content = page.markdown;
      } else if (type.startsWith('text/') || type === 'application/json' || type.endsWith('+json') || type === 'application/xml' || type === '') {
        content = decodeBody(response.body, response.contentType);
      } else {
        throw new ToolRuntimeError('tool_failed', `${response.url} is ${type} (${response.body.length} bytes); web_fetch returns only HTML, text and JSON`);
      }
      const shown = truncateMiddle(content, params.max_chars ?? DEFAULT_FETCH_CHARS);
      const notes = [
        `URL: ${response.url}`,
        `Status: ${response.status}`,
        title ? `Title: ${title}` : '',
        response.truncated ? `Note: the body was cut at ${profile.maxBytes} bytes` : '',
        shown.cutChars > 0 ? `Note: ${shown.cutChars} characters cut from the middle; raise max_chars to see more` : '',
      ].filter(Boolean);
      return textResult(`${notes.join('\n')}\n\n${shown.text}`, {
        details: { url: response.url, status: response.status, title, contentType: type, redirects: response.redirects, bytes: response.body.length },
      });
    },
  });
}

function createWebSearchTool(profile: WebSearchProfile): WorkerAgentTool {
  return defineWorkerTool({
    name: 'web_search',
    description: 'Search the web; returns results as title, URL and snippet. Use web_fetch to read a result.',
    schema: searchSchema,
    executionMode: 'parallel',
    isReadOnly: true,
    describeActivity: (params) => `Searching the web for "${params.query}"`,
    describeCompletedActivity: (params, result) => `Searched the web for "${params.query}" (${(result.details as { count?: number } | undefined)?.count ?? 0} results)`,
    async execute(params, context) {
      const results = await searchWeb({ profile, query: params.query, count: Math.min(params.count ?? 5, profile.maxResults), signal: context.signal });
      const text =
        results.length === 0
          ? `No results for "${params.query}".`
          : results.map((result, index) => `${index + 1}. ${result.title || result.url}\n   ${result.url}${result.snippet ? `\n   ${result.snippet}` : ''}`).join('\n');
      return textResult(text, { details: { provider: profile.provider, count: results.length, results } });
    },
  });
}

/** The web category's part of the configuration, handed to it where the catalogs are composed. */
export interface WebProfiles {
  webFetch?: WebFetchProfile;
  webSearch?: WebSearchProfile;
}

/**
 * The web category: `web_fetch` when `profiles.webFetch` is set, `web_search` when
 * `profiles.webSearch` is; `[]` when neither profile is configured. Both read-only and parallel.
 */
export function createWebTools(profiles: WebProfiles): WorkerAgentTool[] {
  const tools: WorkerAgentTool[] = [];
  if (profiles.webFetch) tools.push(createWebFetchTool(profiles.webFetch));
  if (profiles.webSearch) tools.push(createWebSearchTool(profiles.webSearch));
  return tools;
}
