import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isToolRuntimeError, toStrictJSONSchema, zodToJSONSchema, type JSONObject, type JSONValue } from '../../../../src/index.js';

/** Every object node in a schema, at every depth. */
function objectNodes(node: JSONValue, found: JSONObject[] = []): JSONObject[] {
  if (Array.isArray(node)) for (const child of node) objectNodes(child, found);
  else if (node !== null && typeof node === 'object') {
    if (node.type === 'object') found.push(node);
    for (const child of Object.values(node)) objectNodes(child, found);
  }
  return found;
}

describe('toStrictJSONSchema', () => {
  const source = zodToJSONSchema(
    z.object({
      path: z.string().min(1).max(200).describe('Where to write'),
      mode: z.enum(['create', 'append']).default('create'),
      owner: z.object({ name: z.string(), email: z.email().optional() }),
      steps: z.array(z.object({ run: z.string(), timeoutMs: z.number().int().min(1).optional() })),
      note: z.string().nullable().optional(),
    }),
  );
  const strict = toStrictJSONSchema(source);

  it('lists every property in required and closes every object, at every depth', () => {
    const objects = objectNodes(strict);
    expect(objects).toHaveLength(3);
    for (const object of objects) {
      expect(object.additionalProperties).toBe(false);
      expect(object.required).toEqual(Object.keys(object.properties as JSONObject));
    }
  });

  it('writes optional fields as a union with null, keeps required ones as they were', () => {
    expect(strict).toEqual({
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Where to write (minLength: 1, maxLength: 200)' },
        mode: { anyOf: [{ type: 'string', enum: ['create', 'append'] }, { type: 'null' }], description: '(default: "create")' },
        owner: {
          type: 'object',
          properties: { name: { type: 'string' }, email: { type: ['string', 'null'], format: 'email', pattern: expect.any(String) } },
          required: ['name', 'email'],
          additionalProperties: false,
        },
        steps: {
          type: 'array',
          items: {
            type: 'object',
            properties: { run: { type: 'string' }, timeoutMs: { type: ['integer', 'null'], minimum: 1, maximum: Number.MAX_SAFE_INTEGER } },
            required: ['run', 'timeoutMs'],
            additionalProperties: false,
          },
        },
        note: { type: ['string', 'null'] },
      },
      required: ['path', 'mode', 'owner', 'steps', 'note'],
      additionalProperties: false,
    });
  });

  it('drops $schema and moves only the keywords strict mode does not take into descriptions', () => {
    const text = JSON.stringify(strict);
    for (const keyword of ['$schema', 'minLength', 'maxLength', 'default']) {
      expect(text).not.toContain(`"${keyword}"`);
    }
    // OpenAI's structured-outputs guide lists these as supported: the provider enforces them.
    for (const keyword of ['pattern', 'format', 'minimum', 'maximum']) {
      expect(text).toContain(`"${keyword}"`);
    }
  });

  it('turns oneOf into anyOf and converts its branches', () => {
    const result = toStrictJSONSchema({
      type: 'object',
      properties: { shape: { oneOf: [{ type: 'object', properties: { r: { type: 'number' } } }, { type: 'string', maxLength: 3 }] } },
      required: ['shape'],
    });
    expect(result.properties).toEqual({
      shape: {
        anyOf: [
          { type: 'object', properties: { r: { type: ['number', 'null'] } }, required: ['r'], additionalProperties: false },
          { type: 'string', description: '(maxLength: 3)' },
        ],
      },
    });
  });

  it('refuses a oneOf whose options can overlap: anyOf would accept more', () => {
    expect(() =>
      toStrictJSONSchema({ type: 'object', properties: { v: { oneOf: [{ type: 'string' }, { type: 'string', maxLength: 3 }] } }, required: ['v'] }),
    ).toThrow(/strict mode cannot represent v: an exclusive union whose options can overlap/);
  });

  it('keeps $defs and $ref, converting the definitions too', () => {
    const node: z.ZodType = z.object({ name: z.string(), children: z.array(z.lazy(() => node)).optional() });
    const result = toStrictJSONSchema(zodToJSONSchema(z.object({ root: node })));
    const text = JSON.stringify(result);
    expect(text).toContain('"$ref"');
    const defs = (result.$defs ?? result.definitions) as JSONObject | undefined;
    expect(defs).toBeDefined();
    for (const object of objectNodes(result)) expect(object.additionalProperties).toBe(false);
  });

  it('keeps enum, const and descriptions', () => {
    const result = toStrictJSONSchema(zodToJSONSchema(z.object({ kind: z.literal('a').describe('the kind'), level: z.enum(['low', 'high']) })));
    expect(result.properties).toEqual({ kind: { type: 'string', const: 'a', description: 'the kind' }, level: { type: 'string', enum: ['low', 'high'] } });
  });

  it('refuses a record instead of sending a closed empty object', () => {
    let caught: unknown;
    try {
      toStrictJSONSchema(zodToJSONSchema(z.object({ env: z.record(z.string(), z.string()) })));
    } catch (error) {
      caught = error;
    }
    expect(isToolRuntimeError(caught, 'invalid_definition')).toBe(true);
    expect((caught as Error).message).toMatch(/^strict mode cannot represent env: a record .* Way out: an array of \{key, value\} objects, or `strict: false`\.$/);
  });

  it('is pure: the input is left as it was', () => {
    const before = JSON.stringify(source);
    toStrictJSONSchema(source);
    expect(JSON.stringify(source)).toBe(before);
    expect(source.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
  });
});
