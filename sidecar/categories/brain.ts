import { z } from 'zod';
import { defineWorkerTool, textResult, truncateMiddle, type ToolExecutionContext, type WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';
import type { BrainIndex } from './brain/brain-index.js';
import type { BrainLimits, BrainStatus } from './brain/brain-protocol.js';

const recallSchema = z.object({
  query: z.string().min(1).describe('What to look for in the knowledge base (plain words).'),
  limit: z.number().int().min(1).max(50).optional().describe('How many pages at most (default 8).'),
});
const getPageSchema = z.object({
  id: z.string().min(1).describe('The page id, as recall returned it (its path in the knowledge base).'),
});

// A call that finds no index yet waits for the first build until this long before its deadline,
// then answers with the progress (a result sent after the deadline would be replaced by `timeout`).
const MIN_MARGIN_MS = 150;
const MAX_MARGIN_MS = 2_000;
// Without a known deadline (a tool called directly), the wait is bounded all the same.
const DEFAULT_WAIT_MS = 30_000;

/** How long a call may wait for the first build: its time left, less a margin to answer in. */
export function brainWaitMs(execution: Pick<ToolExecutionContext, 'remainingMs'>): number {
  const remaining = execution.remainingMs?.();
  if (remaining === undefined) return DEFAULT_WAIT_MS;
  return Math.max(0, remaining - Math.min(MAX_MARGIN_MS, Math.max(MIN_MARGIN_MS, remaining / 10)));
}

const count = (value: number) => value.toLocaleString('en-US');

/** The "still being indexed" answer, with the progress so far. */
export function indexingText(status: BrainStatus): string {
  const found = status.pagesFound > 0 ? ` of ${count(status.pagesFound)} found` : '';
  return `The knowledge base is still being indexed: ${count(status.pagesIndexed)} pages${found} so far (${(status.bytesIndexed / 1e6).toFixed(1)} MB). Nothing can be searched until the first build is done; try again shortly.`;
}

const bytesText = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${Number((bytes / 1024 / 1024).toFixed(1))} MiB` : bytes >= 1024 ? `${Number((bytes / 1024).toFixed(1))} KiB` : `${bytes} bytes`;
const pages = (n: number, verb: 'is' | 'has') => `${count(n)} ${n === 1 ? `page ${verb}` : `pages ${verb === 'is' ? 'are' : 'have'}`}`;

/** One line per cap the index passes; empty when it passes none. */
export function capsText(status: BrainStatus, limits: BrainLimits): string {
  const notes: string[] = [];
  if (status.skippedByPageCap > 0) notes.push(`${pages(status.skippedByPageCap, 'is')} not indexed: the Brain holds at most ${count(limits.maxPages)} pages.`);
  if (status.skippedByTotalCap > 0) notes.push(`${pages(status.skippedByTotalCap, 'is')} not indexed: the Brain holds at most ${bytesText(limits.maxTotalBytes)} of text.`);
  if (status.truncatedPages > 0) notes.push(`${pages(status.truncatedPages, 'is')} indexed by its first ${bytesText(limits.maxPageBytes)} only.`.replace('pages are indexed by its', 'pages are indexed by their'));
  return notes.map((note) => `Note: ${note}`).join('\n');
}

/**
 * The read-only Brain tools, `recall` and `get_page`, over the sidecar's BrainIndex; `[]` unless
 * the turn enables Brain and the sidecar has a Brain folder (`getIndex` returns undefined then).
 * Both parallel. Neither waits for a scan: the index is kept current in the background. Only a
 * call that finds no index yet waits for the first build, within its deadline, and otherwise
 * answers that the knowledge base is still being indexed, with the progress so far. `recall`'s
 * answer says when the index passes one of its caps.
 */
export function createBrainTools(context: CategoryContext, getIndex: () => BrainIndex | undefined): WorkerAgentTool[] {
  if (!context.turn.brainEnabled) return [];
  const index = getIndex();
  if (!index) return [];
  const maxChars = context.config.limits.maxResultTextChars;

  const recall = defineWorkerTool({
    name: 'recall',
    description: 'Search the knowledge base (Brain) and return the best matching pages with their id, title and a snippet. Read a page whole with get_page.',
    schema: recallSchema,
    executionMode: 'parallel',
    isReadOnly: true,
    describeActivity: (params) => `Recalling "${params.query}"`,
    describeCompletedActivity: (params, result) => {
      const details = result.details as { count?: number; indexing?: boolean } | undefined;
      return details?.indexing ? `Recalled "${params.query}" (still indexing)` : `Recalled "${params.query}" (${details?.count ?? 0} pages)`;
    },
    async execute(params, execution) {
      const answer = await index.search(params.query, params.limit ?? 8, { signal: execution.signal, waitMs: brainWaitMs(execution) });
      if (!answer.ready) return textResult(indexingText(answer.status), { details: { indexing: true, count: 0, ids: [], status: answer.status } });
      const hits = answer.value;
      const caps = capsText(answer.status, index.limits);
      const text =
        (hits.length === 0
          ? `No page matches "${params.query}".`
          : hits.map((hit, i) => `${i + 1}. ${hit.title} (id: ${hit.id})\n   ${hit.snippet.replace(/\s+/g, ' ')}`).join('\n')) + (caps ? `\n\n${caps}` : '');
      return textResult(truncateMiddle(text, maxChars).text, { details: { count: hits.length, ids: hits.map((hit) => hit.id), pages: answer.status.pagesIndexed } });
    },
  });

  const getPage = defineWorkerTool({
    name: 'get_page',
    description: 'Read one knowledge base (Brain) page whole, by the id recall gave.',
    schema: getPageSchema,
    executionMode: 'parallel',
    isReadOnly: true,
    describeActivity: (params) => `Reading Brain page ${params.id}`,
    describeCompletedActivity: (params) => `Read Brain page ${params.id}`,
    async execute(params, execution) {
      const answer = await index.getPage(params.id, { signal: execution.signal, waitMs: brainWaitMs(execution) });
      if (!answer.ready) return textResult(indexingText(answer.status), { details: { indexing: true, status: answer.status } });
      const page = answer.value;
      const cut = page.truncated ? `\n\n[The page has ${count(page.size)} bytes; only its first ${count(Buffer.byteLength(page.content))} are in the Brain.]` : '';
      return textResult(truncateMiddle(`# ${page.title} (id: ${page.id})\n\n${page.content}${cut}`, maxChars).text, {
        details: { id: page.id, chars: page.content.length, truncated: page.truncated },
      });
    },
  });

  return [recall, getPage];
}
