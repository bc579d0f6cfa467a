import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { collectToolSchemas, defineWorkerTool, isToolRuntimeError, textResult, zodToJSONSchema, type JSONObject } from '../../../../src/index.js';
import { toolKey, toolParameters } from '../../../../src/schema/collect-tool-schemas.js';

const execute = async () => textResult('ok');
const schema = z.object({ path: z.string(), limit: z.number().max(10).optional() });
const rawSchema: JSONObject = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { count: { type: 'integer', minimum: 1, maximum: 10 }, label: { type: 'string', default: 'x' } },
  required: ['count'],
};

describe('collectToolSchemas', () => {
  it('returns one plain definition per tool, in order, with every field', () => {
    const tools = [
      defineWorkerTool({ name: 'read', description: 'Reads.', schema, execute, executionMode: 'parallel', isReadOnly: true }),
      defineWorkerTool({
        name: 'create_issue',
        description: 'Creates an issue.',
        namespace: 'github',
        namespaceDescription: 'GitHub tools',
        deferLoading: true,
        isDestructive: true,
        schema,
        execute,
      }),
    ];
    expect(collectToolSchemas(tools)).toEqual([
      {
        name: 'read',
        description: 'Reads.',
        parameters: zodToJSONSchema(schema),
        strict: false,
        deferLoading: false,
        executionMode: 'parallel',
        readOnly: true,
        destructive: false,
      },
      {
        name: 'create_issue',
        description: 'Creates an issue.',
        parameters: zodToJSONSchema(schema),
        strict: false,
        namespace: 'github',
        namespaceDescription: 'GitHub tools',
        deferLoading: true,
        executionMode: 'sequential',
        readOnly: false,
        destructive: true,
      },
    ]);
  });

  it('sends a strict Zod tool the strict conversion', () => {
    const [collected] = collectToolSchemas([defineWorkerTool({ name: 'read', description: 'Reads.', strict: true, schema, execute })]);
    expect(collected?.strict).toBe(true);
    expect(collected?.parameters).toEqual({
      type: 'object',
      properties: { path: { type: 'string' }, limit: { type: ['number', 'null'], maximum: 10 } },
      required: ['path', 'limit'],
      additionalProperties: false,
    });
  });

  it('sends a raw jsonSchema unchanged, byte for byte, even when strict', () => {
    const before = JSON.stringify(rawSchema);
    for (const strict of [true, false]) {
      const [collected] = collectToolSchemas([defineWorkerTool({ name: 'count', description: 'Counts.', strict, jsonSchema: rawSchema, execute })]);
      expect(collected?.parameters).toBe(rawSchema);
      expect(JSON.stringify(collected?.parameters)).toBe(before);
      expect(collected?.strict).toBe(strict);
    }
  });

  it('sends the raw jsonSchema, not the Zod one, when a tool has both', () => {
    const tool = defineWorkerTool({ name: 'both', description: 'Both.', strict: true, schema: z.object({ count: z.number() }), jsonSchema: rawSchema, execute });
    expect(collectToolSchemas([tool])[0]?.parameters).toBe(rawSchema);
  });

  it('carries a strict note when a tool has one', () => {
    const tool = defineWorkerTool({ name: 'read', description: 'Reads.', strictNote: 'sent non-strict: a record', schema, execute });
    expect(collectToolSchemas([tool])[0]?.strictNote).toBe('sent non-strict: a record');
    expect(collectToolSchemas([defineWorkerTool({ name: 'read', description: 'Reads.', schema, execute })])[0]).not.toHaveProperty('strictNote');
  });

  it('caches the parameters per tool object', () => {
    const tool = defineWorkerTool({ name: 'read', description: 'Reads.', strict: true, schema, execute });
    const first = toolParameters(tool);
    expect(collectToolSchemas([tool])[0]?.parameters).toBe(first);
    expect(toolParameters(tool)).toBe(first);
  });

  it('refuses two tools with the same namespace and name', () => {
    const a = defineWorkerTool({ name: 'search', namespace: 'github', description: 'A.', schema, execute });
    const b = defineWorkerTool({ name: 'search', namespace: 'github', description: 'B.', schema, execute });
    let caught: unknown;
    try {
      collectToolSchemas([a, b]);
    } catch (error) {
      caught = error;
    }
    expect(isToolRuntimeError(caught, 'duplicate_tool')).toBe(true);
    expect((caught as Error).message).toBe('two tools are named "github.search": a tool\'s namespace and name must be unique within a turn');
  });

  it('allows one name in two namespaces, and beside an unnamespaced tool', () => {
    const tools = ['github', 'gitlab', undefined].map((namespace) => defineWorkerTool({ name: 'search', namespace, description: 'S.', schema, execute }));
    expect(collectToolSchemas(tools).map((t) => toolKey(t.name, t.namespace))).toEqual(['github.search', 'gitlab.search', 'search']);
  });
});

describe('toolKey', () => {
  it('joins namespace and name with a dot, or gives the bare name', () => {
    expect(toolKey('search', 'github')).toBe('github.search');
    expect(toolKey('search')).toBe('search');
    expect(toolKey('search', '')).toBe('search');
  });
});
