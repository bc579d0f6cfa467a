import { describe, expect, it } from 'vitest';
import { createToolCatalog } from '../../../../controller/loop/tool-catalog.js';
import { tool } from '../tool-definitions.js';

const tools = [
  tool({ name: 'echo' }),
  tool({ name: 'lookup', namespace: 'ns', namespaceDescription: 'Lookup tools.' }),
  tool({ name: 'archive_lookup', description: 'Searches the deep archive.', namespace: 'ns', namespaceDescription: 'Lookup tools.', deferLoading: true }),
  tool({ name: 'weather', description: 'Gets the weather forecast.', deferLoading: true, executionMode: 'sequential' }),
];

describe('createToolCatalog', () => {
  it('maps flattened names back to the namespace and name', () => {
    const catalog = createToolCatalog({ tools, toolSearch: 'hosted', flattenNamespaces: true });
    expect(catalog.resolve({ name: 'ns__lookup' })).toMatchObject({ kind: 'sidecar', name: 'lookup', namespace: 'ns' });
    expect(catalog.resolve({ name: 'echo' })).toMatchObject({ kind: 'sidecar', name: 'echo' });
    expect(catalog.resolve({ name: 'nope__x' })).toEqual({ kind: 'sidecar', name: 'nope__x' });
  });

  it('resolves by the namespace the model returns', () => {
    const catalog = createToolCatalog({ tools, toolSearch: 'hosted', flattenNamespaces: false });
    expect(catalog.resolve({ name: 'lookup', namespace: 'ns' })).toMatchObject({ kind: 'sidecar', name: 'lookup', namespace: 'ns' });
    expect(catalog.resolve({ name: 'lookup', namespace: 'other' })).toEqual({ kind: 'sidecar', name: 'lookup', namespace: 'other' });
  });

  it('client search: a deferred tool is refused until a search loads it, then appended at the end', () => {
    const catalog = createToolCatalog({ tools, toolSearch: 'client', flattenNamespaces: false });
    const before = catalog.providerTools();
    expect(catalog.resolve({ name: 'archive_lookup', namespace: 'ns' }).kind).toBe('not-loaded');
    expect(catalog.resolve({ name: 'tool_search' }).kind).toBe('client-search');

    const answer = catalog.search(JSON.stringify({ query: 'deep archive' }));
    expect(answer.isError).toBe(false);
    expect(answer.loaded.map((t) => t.name)).toEqual(['archive_lookup']);
    expect(answer.output).toContain('archive_lookup (namespace ns)');

    const after = catalog.providerTools();
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.slice(before.length)).toEqual([
      {
        type: 'namespace',
        name: 'ns',
        description: 'Lookup tools.',
        tools: [{ type: 'function', name: 'archive_lookup', description: 'Searches the deep archive.', parameters: tools[2]!.parameters, strict: false }],
      },
    ]);
    expect(catalog.resolve({ name: 'archive_lookup', namespace: 'ns' }).kind).toBe('sidecar');
    expect(catalog.resolve({ name: 'weather' }).kind).toBe('not-loaded');

    // Searching again does not append the same tool twice.
    catalog.search(JSON.stringify({ query: 'archive' }));
    expect(catalog.providerTools()).toHaveLength(after.length);
  });

  it('client search: bad arguments and no match are answered for the model', () => {
    const catalog = createToolCatalog({ tools, toolSearch: 'client', flattenNamespaces: false });
    expect(catalog.search('{not json').isError).toBe(true);
    expect(catalog.search(JSON.stringify({ query: 'zebra' })).output).toContain('No tools match');
  });
  it('hands out the same tool list until a search loads tools, and never changes a list it handed out', () => {
    const catalog = createToolCatalog({ tools, toolSearch: 'client', flattenNamespaces: false });
    const first = catalog.providerTools();
    expect(catalog.providerTools()).toBe(first);
    const length = first.length;
    catalog.search(JSON.stringify({ query: 'weather forecast' }));
    const second = catalog.providerTools();
    expect(second).not.toBe(first);
    expect(first).toHaveLength(length);
    expect(second.slice(length).map((entry) => entry.name)).toEqual(['weather']);
    expect(catalog.providerTools()).toBe(second);
  });

  it('accepts a name without its namespace when it is unique across namespaces', () => {
    const catalog = createToolCatalog({ tools: [...tools, tool({ name: 'echo', namespace: 'other' })], toolSearch: 'hosted', flattenNamespaces: false });
    expect(catalog.resolve({ name: 'lookup' })).toMatchObject({ kind: 'sidecar', name: 'lookup', namespace: 'ns' });
    // `echo` exists plain and in `other`: the plain one wins.
    expect(catalog.resolve({ name: 'echo' })).toEqual(expect.objectContaining({ kind: 'sidecar', name: 'echo' }));
    expect(catalog.resolve({ name: 'echo' })).not.toHaveProperty('namespace');
  });
});
