import { describe, expect, it } from 'vitest';
import { createBm25Index, tokenize } from '../../../../controller/tool-search/bm25.js';
import { createToolSearcher } from '../../../../controller/tool-search/search-deferred-tools.js';
import { tool } from '../tool-definitions.js';

describe('tokenize', () => {
  it('splits snake_case, camelCase and punctuation into lowercase terms', () => {
    expect(tokenize('deferred_lookup getPageTitle, HTTP-fetch!')).toEqual(['deferred', 'lookup', 'get', 'page', 'title', 'http', 'fetch']);
  });
});

describe('createBm25Index', () => {
  it('ranks the document with more (and rarer) matching terms first and drops non-matches', () => {
    const index = createBm25Index([
      { id: 'weather', text: 'get the weather forecast for a city' },
      { id: 'calendar', text: 'create a calendar event for a day' },
      { id: 'forecast', text: 'sales forecast for a quarter' },
    ]);
    const hits = index.search('weather forecast');
    expect(hits.map((hit) => hit.id)).toEqual(['weather', 'forecast']);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
  });

  it('weighs a rare term above a common one', () => {
    const index = createBm25Index([
      { id: 'a', text: 'file file read' },
      { id: 'b', text: 'file archive' },
      { id: 'c', text: 'file list' },
    ]);
    expect(index.search('file archive')[0]!.id).toBe('b');
  });

  it('honours the limit', () => {
    const index = createBm25Index(Array.from({ length: 20 }, (_, i) => ({ id: `t${i}`, text: `tool number ${i}` })));
    expect(index.search('tool', 5)).toHaveLength(5);
  });
});

describe('createToolSearcher', () => {
  it('finds tools by parameter names and namespace descriptions, not only names', () => {
    const searcher = createToolSearcher([
      tool({ name: 'alpha', description: 'Does a thing.', parameters: { type: 'object', properties: { invoice_number: { type: 'string' } } } }),
      tool({ name: 'beta', description: 'Does another thing.', namespace: 'crm', namespaceDescription: 'Customer relationship records' }),
      tool({ name: 'gamma', description: 'Unrelated.' }),
    ]);
    expect(searcher.search('invoice').map((t) => t.name)).toEqual(['alpha']);
    expect(searcher.search('customer records').map((t) => t.name)).toEqual(['beta']);
    expect(searcher.search('zebra')).toEqual([]);
  });
});
