import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { convertToStrictJSONSchema, isToolRuntimeError, toStrictJSONSchema, zodToJSONSchema, type JSONObject, type JSONValue } from '../../../../src/index.js';

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

  it('keeps the described constraints as keywords in the enforced twin, and only there', () => {
    const conversion = convertToStrictJSONSchema(zodToJSONSchema(z.object({ code: z.string().min(2).max(4), link: z.url(), mode: z.string().default('a') })));
    if (!conversion.ok) throw new Error(conversion.refusal.message);
    expect(conversion.schema.properties).toEqual({
      code: { type: 'string', description: '(minLength: 2, maxLength: 4)' },
      link: { type: 'string', description: '(format: "uri")' },
      mode: { type: ['string', 'null'], description: '(default: "a")' },
    });
    expect(conversion.enforced.properties).toEqual({
      code: { type: 'string', minLength: 2, maxLength: 4 },
      link: { type: 'string', format: 'uri' },
      mode: { type: ['string', 'null'] },
    });
  });
});

describe('toStrictJSONSchema with a raw schema from outside (source: json)', () => {
  const refusal = (schema: JSONObject) => {
    const conversion = convertToStrictJSONSchema(schema, { source: 'json' });
    return conversion.ok ? undefined : conversion.refusal;
  };

  it('converts a schema that is already closed and complete, oneOf of disjoint types included', () => {
    const schema: JSONObject = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { id: { oneOf: [{ type: 'integer' }, { type: 'string', format: 'uuid' }] }, note: { type: ['string', 'null'] } },
      required: ['id'],
      additionalProperties: false,
    };
    expect(toStrictJSONSchema(schema, { source: 'json' })).toEqual({
      type: 'object',
      properties: { id: { anyOf: [{ type: 'integer' }, { type: 'string', format: 'uuid' }] }, note: { type: ['string', 'null'] } },
      required: ['id', 'note'],
      additionalProperties: false,
    });
  });

  it('refuses an open object, which z.object-made schemas never are', () => {
    const open: JSONObject = { type: 'object', properties: { a: { type: 'object', properties: { b: { type: 'string' } }, required: ['b'] } }, required: ['a'], additionalProperties: false };
    expect(refusal(open)).toMatchObject({ path: 'a', construct: expect.stringMatching(/^an open object/) });
    expect(convertToStrictJSONSchema(open).ok).toBe(true);
  });

  it('refuses an optional field that cannot be null, with no read-back to undo the null', () => {
    expect(refusal({ type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } } }, additionalProperties: false })).toMatchObject({
      path: 'tags',
      construct: expect.stringMatching(/^an optional field that cannot be null/),
    });
  });

  it.each<[string, JSONObject, string, RegExp]>([
    ['an external $ref', { $ref: 'https://example.com/x.json' }, 'v', /^a `\$ref` outside the schema/],
    ['the OpenAPI nullable keyword', { type: 'string', nullable: true }, 'v', /^the OpenAPI `nullable` keyword/],
    ['if/then/else', { type: 'string', if: { minLength: 2 }, then: { pattern: 'a' } }, 'v', /^a conditional or dependent schema/],
    ['contains', { type: 'array', items: { type: 'string' }, contains: { const: 'x' } }, 'v', /^an evaluation keyword/],
    ['an untyped object', { properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }, 'v', /^object keywords without `"type": "object"`/],
    ['an array without items', { type: 'array' }, 'v', /^an array without an item schema/],
    ['a required field not declared', { type: 'object', properties: {}, required: ['ghost'], additionalProperties: false }, 'v.ghost', /^a required field that is not declared/],
  ])('refuses %s', (_label, field, path, construct) => {
    expect(refusal({ type: 'object', properties: { v: field }, required: ['v'], additionalProperties: false })).toMatchObject({ path, construct: expect.stringMatching(construct) });
  });

  it('names the path through arrays, options and definitions', () => {
    expect(refusal({ type: 'object', properties: { rows: { type: 'array', items: { type: 'object', properties: {}, additionalProperties: true } } }, required: ['rows'], additionalProperties: false })?.path).toBe('rows[]');
    expect(refusal({ type: 'object', properties: { v: { anyOf: [{ type: 'string' }, {}] } }, required: ['v'], additionalProperties: false })?.path).toBe('v<option 2>');
    expect(refusal({ type: 'object', properties: { v: { $ref: '#/$defs/T' } }, required: ['v'], additionalProperties: false, $defs: { T: { type: 'array', prefixItems: [] } } })?.path).toBe('$defs.T');
  });
});
