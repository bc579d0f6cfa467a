import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isToolRuntimeError, zodToJSONSchema } from '../../../../src/index.js';

describe('zodToJSONSchema', () => {
  it('does not come out empty for a zod v4 object (the zod-to-json-schema 3.x bug)', () => {
    const schema = zodToJSONSchema(z.object({ path: z.string().describe('the file'), limit: z.number().int().positive() }));
    expect(schema.type).toBe('object');
    expect(schema.properties).toEqual({
      path: { type: 'string', description: 'the file' },
      limit: { type: 'integer', exclusiveMinimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    });
    expect(schema.required).toEqual(['path', 'limit']);
  });

  it('writes the input side: a field with a default is optional to the model', () => {
    const schema = zodToJSONSchema(z.object({ path: z.string(), encoding: z.string().default('utf8'), lines: z.number().optional() }));
    expect(schema.required).toEqual(['path']);
    expect(schema.properties).toMatchObject({ encoding: { type: 'string', default: 'utf8' } });
  });

  it('throws invalid_definition for a non-object root', () => {
    let caught: unknown;
    try {
      zodToJSONSchema(z.array(z.string()));
    } catch (error) {
      caught = error;
    }
    expect(isToolRuntimeError(caught, 'invalid_definition')).toBe(true);
  });
});
