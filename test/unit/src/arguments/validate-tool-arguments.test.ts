import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkerTool, textResult, validateToolArguments, type JSONObject, type ToolExecutionContext, type WorkerAgentTool } from '../../../../src/index.js';
import { compileJsonSchema } from '../../../../src/arguments/json-schema-validator.js';
import { todo, writeFile } from './corpus-tools.js';

const context: ToolExecutionContext = { signal: new AbortController().signal, callId: 'call_1', emit: async () => {} };

describe('validateToolArguments', () => {
  it('hands execute absent fields where a strict model sent null', async () => {
    const received: unknown[] = [];
    const tool = defineWorkerTool({
      name: 'schedule',
      description: 'Schedules a job.',
      strict: true,
      schema: z.object({
        at: z.string(),
        repeat: z.object({ every: z.number(), until: z.string().optional() }).optional(),
        retries: z.number().default(3),
        steps: z.array(z.object({ run: z.string(), cwd: z.string().optional() })),
      }),
      execute: async (params) => {
        received.push(params);
        return textResult('scheduled');
      },
    });
    const result = validateToolArguments(tool, '{"at":"9am","repeat":{"every":5,"until":null},"retries":null,"steps":[{"run":"ls","cwd":null},{"run":"pwd","cwd":"/"}]}');
    expect(result).toEqual({
      ok: true,
      value: { at: '9am', repeat: { every: 5 }, retries: 3, steps: [{ run: 'ls' }, { run: 'pwd', cwd: '/' }] },
      repairs: ['null_to_absent'],
    });
    if (!result.ok) return;
    await tool.execute(result.value, context);
    const params = received[0] as { repeat: object; steps: object[] };
    expect('until' in params.repeat).toBe(false);
    expect('cwd' in (params.steps[0] as object)).toBe(false);
  });

  it('keeps null where the Zod field itself accepts null', () => {
    const tool = defineWorkerTool({
      name: 'tag',
      description: 'Tags.',
      strict: true,
      schema: z.object({ label: z.string().nullable().optional(), color: z.string().optional() }),
      execute: async () => textResult('ok'),
    });
    expect(validateToolArguments(tool, '{"label":null,"color":null}')).toEqual({ ok: true, value: { label: null }, repairs: ['null_to_absent'] });
  });

  it('picks the union branch the nulls belong to', () => {
    const tool = defineWorkerTool({
      name: 'shape',
      description: 'Draws.',
      strict: true,
      schema: z.object({
        shape: z.union([z.object({ kind: z.literal('circle'), r: z.number() }), z.object({ kind: z.literal('box'), w: z.number(), h: z.number().optional() })]),
      }),
      execute: async () => textResult('ok'),
    });
    expect(validateToolArguments(tool, '{"shape":{"kind":"box","w":2,"h":null}}')).toEqual({ ok: true, value: { shape: { kind: 'box', w: 2 } }, repairs: ['null_to_absent'] });
    const bad = validateToolArguments(tool, '{"shape":{"kind":"tri"}}');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.message).toBe('Invalid arguments for tool `shape`:\n- shape: does not match any allowed shape, got {"kind":"tri"} (closest option: shape.kind: expected "circle", got "tri")');
  });

  it('does not touch null or extra fields for a non-strict tool', () => {
    const result = validateToolArguments(writeFile, '{"path":"a","content":"b","tags":null}');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toBe('Invalid arguments for tool `write_file`:\n- tags: expected array, got null null');
  });

  it('writes one line per bad field, capped', () => {
    const tool = defineWorkerTool({
      name: 'wide',
      description: 'Many fields.',
      schema: z.object(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}`, z.string()]))),
      execute: async () => textResult('ok'),
    });
    const result = validateToolArguments(tool, '{}');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const lines = result.error.message.split('\n');
    expect(lines[0]).toBe('Invalid arguments for tool `wide`:');
    expect(lines.slice(1)).toEqual([...Array.from({ length: 8 }, (_, i) => `- f${i}: required`), '- ... and 22 more']);
  });

  it('checks ajv first, then lets Zod produce the params, when a tool has both schemas', () => {
    const jsonSchema: JSONObject = {
      type: 'object',
      properties: { result: { type: 'object', properties: { score: { type: 'number', minimum: 0 } }, required: ['score'] } },
      required: ['result'],
    };
    const tool = defineWorkerTool({
      name: 'submit_result',
      description: 'Submits.',
      strict: true,
      jsonSchema,
      schema: z.object({ result: z.object({ score: z.number().transform((n) => Math.round(n)) }) }),
      execute: async () => textResult('ok'),
    });
    expect(validateToolArguments(tool, '{"result":{"score":2.6}}')).toEqual({ ok: true, value: { result: { score: 3 } }, repairs: [] });
    const bad = validateToolArguments(tool, '{"result":{"score":-1}}');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.message).toBe('Invalid arguments for tool `submit_result`:\n- result.score: must be >= 0, got -1');
  });

  it('compiles a raw schema once per schema object', () => {
    const schema: JSONObject = { type: 'object', properties: { a: { type: 'string' } } };
    const first = compileJsonSchema(schema);
    expect(compileJsonSchema(schema)).toBe(first);
    expect(compileJsonSchema({ ...schema })).not.toBe(first);
  });

  it('reports a raw schema ajv cannot compile as an error result', () => {
    const tool = defineWorkerTool({
      name: 'broken',
      description: 'Broken schema.',
      jsonSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } },
      execute: async () => textResult('ok'),
    });
    const result = validateToolArguments(tool, '{"a":1}');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toContain("the tool's JSON Schema cannot be compiled");
  });

  it('validates a recursive schema without overflowing on deep values', () => {
    type Node = { children?: Node[] };
    const node: z.ZodType<Node> = z.lazy(() => z.object({ children: z.array(node).optional() }));
    const tool = defineWorkerTool({ name: 'tree', description: 'Tree.', strict: true, schema: z.object({ root: node }), execute: async () => textResult('ok') });
    const deep = `{"root":${'{"children":['.repeat(20_000)}{}${']}'.repeat(20_000)}}`;
    const result = validateToolArguments(tool, deep);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toContain('nested too deeply');
    expect(validateToolArguments(tool, '{"root":{"children":[{"children":null}]}}')).toEqual({
      ok: true,
      value: { root: { children: [{}] } },
      repairs: ['null_to_absent'],
    });
  });

  it('never throws, whatever it is given', () => {
    const inputs: unknown[] = [undefined, null, 42, {}, ['{}'], '\u0000', '\uD800', '{"\uD800":1}', '}{', '{{{{', ']]]]', '"', '```', '```json', '{"a":"\\', 'True', 'NaN'];
    let seed = 7;
    for (let i = 0; i < 200; i++) {
      let text = '';
      for (let j = 0; j < 40; j++) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        text += '{}[]",:\'`\\ aN0\n'.charAt(seed % 16);
      }
      inputs.push(text);
    }
    const tools: WorkerAgentTool[] = [writeFile, todo];
    for (const tool of tools) {
      for (const input of inputs) {
        const result = validateToolArguments(tool, input as string);
        expect(typeof result.ok).toBe('boolean');
        if (!result.ok) expect(['invalid_arguments', 'arguments_too_large']).toContain(result.error.code);
      }
    }
  });

  it('falls back to the default cap when maxBytes is not a number >= 0', () => {
    for (const maxBytes of [Number.NaN, -1]) {
      expect(validateToolArguments(writeFile, '{"path":"a","content":"b"}', { maxBytes }).ok).toBe(true);
      const big = validateToolArguments(writeFile, `{"path":"a","content":"${'x'.repeat(1024 * 1024)}"}`, { maxBytes });
      expect(big.ok ? 'ok' : big.error.code).toBe('arguments_too_large');
    }
  });

  it('says what a non-string input was', () => {
    const result = validateToolArguments(writeFile, 42 as unknown as string);
    expect(result).toEqual({
      ok: false,
      error: { code: 'invalid_arguments', message: 'Invalid arguments for tool `write_file`: expected a JSON string, got number' },
      repairs: [],
    });
  });
});

describe('raw JSON Schema dialects', () => {
  const execute = async () => textResult('ok');

  it('reads a draft-07 schema as draft-07 (tuple items, definitions)', () => {
    const tool = defineWorkerTool({
      name: 'point',
      description: 'A point.',
      jsonSchema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        definitions: { coord: { type: 'number' } },
        properties: { xy: { type: 'array', items: [{ $ref: '#/definitions/coord' }, { $ref: '#/definitions/coord' }], additionalItems: false } },
        required: ['xy'],
      },
      execute,
    });
    expect(validateToolArguments(tool, '{"xy":[1,2]}')).toEqual({ ok: true, value: { xy: [1, 2] }, repairs: [] });
    const bad = validateToolArguments(tool, '{"xy":[1,"2"]}');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.message).toBe('Invalid arguments for tool `point`:\n- xy[1]: expected number, got string "2"');
  });

  it('compiles two schemas that share an $id', () => {
    const make = (max: number) =>
      defineWorkerTool({
        name: `cap_${max}`,
        description: 'Capped.',
        jsonSchema: { $id: 'https://example.test/capped', type: 'object', properties: { n: { type: 'number', maximum: max } } },
        execute,
      });
    expect(validateToolArguments(make(1), '{"n":2}').ok).toBe(false);
    expect(validateToolArguments(make(5), '{"n":2}').ok).toBe(true);
  });
});
