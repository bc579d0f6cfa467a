import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkerTool, isToolRuntimeError, textResult, type JSONObject } from '../../../../src/index.js';

const execute = async () => textResult('done');
const schema = z.object({ path: z.string() });

function definitionError(make: () => unknown): { code: string; message: string } {
  try {
    make();
  } catch (error) {
    if (!isToolRuntimeError(error)) throw error;
    return { code: error.code, message: error.message };
  }
  throw new Error('expected defineWorkerTool to throw');
}

describe('defineWorkerTool', () => {
  it('fills the defaults of a valid definition', () => {
    const tool = defineWorkerTool({ name: 'read_file', description: 'Reads a file.', schema, execute });
    expect(tool).toMatchObject({ name: 'read_file', strict: false, deferLoading: false, executionMode: 'sequential', isReadOnly: false, isDestructive: false });
    expect(tool.describeActivity({ path: 'x' })).toBe('read_file');
  });

  it.each(['', 'has space', 'dot.name', 'x'.repeat(65), 'émoji'])('refuses the name %j', (name) => {
    const error = definitionError(() => defineWorkerTool({ name, description: 'd', schema, execute }));
    expect(error.code).toBe('invalid_definition');
    expect(error.message).toContain('the name must match');
  });

  it('refuses a bad namespace', () => {
    const error = definitionError(() => defineWorkerTool({ name: 'x', namespace: 'a.b', description: 'd', schema, execute }));
    expect(error).toEqual({ code: 'invalid_definition', message: 'tool "x": the namespace must match ^[a-zA-Z0-9_-]{1,64}$' });
  });

  it.each(['', '   \n'])('refuses the description %j', (description) => {
    const error = definitionError(() => defineWorkerTool({ name: 'x', description, schema, execute }));
    expect(error).toEqual({ code: 'invalid_definition', message: 'tool "x": the description must not be empty' });
  });

  it('refuses a definition with neither schema nor jsonSchema', () => {
    const error = definitionError(() => defineWorkerTool({ name: 'x', description: 'd', execute } as unknown as Parameters<typeof defineWorkerTool>[0]));
    expect(error).toEqual({ code: 'invalid_definition', message: 'tool "x": give a Zod `schema` or a raw `jsonSchema`' });
  });

  it.each([
    ['a string', z.string()],
    ['an array', z.array(z.object({ a: z.string() }))],
    ['a union with a primitive', z.union([z.object({ a: z.string() }), z.number()])],
  ])('refuses a Zod root that is %s', (_label, root) => {
    const error = definitionError(() => defineWorkerTool({ name: 'x', description: 'd', schema: root, execute }));
    expect(error.code).toBe('invalid_definition');
    expect(error.message).toContain('function tool parameters must use a root object schema');
  });

  it.each<[string, JSONObject]>([
    ['an array schema', { type: 'array', items: { type: 'string' } }],
    ['a schema without a type', { properties: { a: { type: 'string' } } }],
  ])('refuses a raw root that is %s', (_label, jsonSchema) => {
    const error = definitionError(() => defineWorkerTool({ name: 'x', description: 'd', jsonSchema, execute }));
    expect(error).toEqual({ code: 'invalid_definition', message: 'tool "x": function tool parameters must use a root object schema' });
  });

  it('refuses a Zod schema JSON Schema cannot represent', () => {
    const error = definitionError(() => defineWorkerTool({ name: 'x', description: 'd', schema: z.object({ when: z.date() }), execute }));
    expect(error.code).toBe('invalid_definition');
    expect(error.message).toContain('cannot convert the schema to JSON Schema');
  });

  it.each([
    ['a tuple', z.object({ at: z.tuple([z.number(), z.number()]) }), 'at', 'a tuple (z.tuple', 'an object with a named field per position, such as {x, y} for [x, y]'],
    ['a record', z.object({ meta: z.object({ env: z.record(z.string(), z.string()) }) }), 'meta.env', 'a record (z.record', 'an array of {key, value} objects'],
    ['a loose object', z.object({ items: z.array(z.looseObject({ id: z.string() })) }), 'items[]', 'an object that keeps extra keys', 'declare every key'],
  ])('refuses a strict tool with %s at definition time, naming the path, the construct and a way out', (_label, strictSchema, path, construct, wayOut) => {
    const error = definitionError(() => defineWorkerTool({ name: 'x', description: 'd', strict: true, schema: strictSchema, execute }));
    expect(error.code).toBe('invalid_definition');
    expect(error.message).toContain(`tool "x": strict mode cannot represent ${path}: ${construct}`);
    expect(error.message).toContain(`Way out: ${wayOut}`);
    expect(error.message).toContain('or `strict: false`');
    // The same schema is fine without strict: nothing there needs converting.
    expect(defineWorkerTool({ name: 'x', description: 'd', schema: strictSchema, execute }).strict).toBe(false);
  });
});
