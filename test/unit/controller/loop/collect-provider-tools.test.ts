import { describe, expect, it } from 'vitest';
import { collectProviderTools } from '../../../../controller/loop/collect-provider-tools.js';
import { tool } from '../tool-definitions.js';

const params = { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] };
const tools = [
  tool({ name: 'echo', strict: true, parameters: params }),
  tool({ name: 'lookup', namespace: 'ns', namespaceDescription: 'The ns tools.', parameters: params }),
  tool({ name: 'plain', parameters: params }),
  tool({ name: 'deep', namespace: 'ns', namespaceDescription: 'The ns tools.', deferLoading: true, parameters: params }),
];

describe('collectProviderTools', () => {
  it('hosted: groups namespaces where their first tool stood, marks deferred functions, adds tool_search', () => {
    expect(collectProviderTools(tools, { toolSearch: 'hosted', flattenNamespaces: false })).toEqual([
      { type: 'function', name: 'echo', description: 'The echo tool.', parameters: params, strict: true },
      {
        type: 'namespace',
        name: 'ns',
        description: 'The ns tools.',
        tools: [
          { type: 'function', name: 'lookup', description: 'The lookup tool.', parameters: params, strict: false },
          { type: 'function', name: 'deep', description: 'The deep tool.', parameters: params, strict: false, defer_loading: true },
        ],
      },
      { type: 'function', name: 'plain', description: 'The plain tool.', parameters: params, strict: false },
      { type: 'tool_search' },
    ]);
  });

  it('client: leaves deferred tools out and offers the tool_search function instead', () => {
    const result = collectProviderTools(tools, { toolSearch: 'client', flattenNamespaces: false });
    expect(JSON.stringify(result)).not.toContain('"deep"');
    expect(result.map((t) => `${t.type}:${String(t.name)}`)).toEqual(['function:echo', 'namespace:ns', 'function:plain', 'function:tool_search']);
    expect((result[3] as unknown as { parameters: { required: string[] } }).parameters.required).toEqual(['query']);
  });

  it('flattens namespaced tools to namespace__name', () => {
    const result = collectProviderTools(tools, { toolSearch: 'hosted', flattenNamespaces: true });
    expect(result.map((t) => t.name ?? t.type)).toEqual(['echo', 'ns__lookup', 'plain', 'ns__deep', 'tool_search']);
    expect(result[3]).toMatchObject({ type: 'function', defer_loading: true });
  });

  it('adds no search entry when nothing is deferred', () => {
    const result = collectProviderTools([tools[0]!], { toolSearch: 'hosted', flattenNamespaces: false });
    expect(result).toHaveLength(1);
  });
});
