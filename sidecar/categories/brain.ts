import { z } from 'zod';
import { defineWorkerTool, textResult, truncateMiddle, type WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';
import type { BrainIndex } from './brain/brain-index.js';

const recallSchema = z.object({
  query: z.string().min(1).describe('What to look for in the knowledge base (plain words).'),
  limit: z.number().int().min(1).max(50).optional().describe('How many pages at most (default 8).'),
});
const getPageSchema = z.object({
  id: z.string().min(1).describe('The page id, as recall returned it (its path in the knowledge base).'),
});

/**
 * The read-only Brain tools, `recall` and `get_page`, over the sidecar's BrainIndex; `[]` unless
 * the turn enables Brain and the sidecar has a Brain folder (`getIndex` returns undefined then).
 * Both parallel; both refresh the index (throttled) before they read.
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
    describeCompletedActivity: (params, result) => `Recalled "${params.query}" (${(result.details as { count?: number } | undefined)?.count ?? 0} pages)`,
    async execute(params, execution) {
      const hits = await index.search(params.query, params.limit ?? 8, execution.signal);
      const text =
        hits.length === 0
          ? `No page matches "${params.query}".`
          : hits.map((hit, i) => `${i + 1}. ${hit.title} (id: ${hit.id})\n   ${hit.snippet.replace(/\s+/g, ' ')}`).join('\n');
      return textResult(truncateMiddle(text, maxChars).text, { details: { count: hits.length, ids: hits.map((hit) => hit.id) } });
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
      const page = await index.getPage(params.id, execution.signal);
      return textResult(truncateMiddle(`# ${page.title} (id: ${page.id})\n\n${page.content}`, maxChars).text, { details: { id: page.id, chars: page.content.length } });
    },
  });

  return [recall, getPage];
}
