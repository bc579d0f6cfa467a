import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { planEmbeddedResponse } from '../../../../controller/model/embedded-plan.js';
import { sampleJsonValue } from '../../../../controller/model/sample-json-value.js';
import { wrapResultSchema } from '../../../../sidecar/categories/submit-result.js';
import type { JSONObject } from '../../../../src/index.js';

const schemas: Record<string, JSONObject> = {
  flat: { type: 'object', properties: { title: { type: 'string', minLength: 3, maxLength: 20 }, count: { type: 'integer', minimum: 5, maximum: 9 }, ok: { type: 'boolean' } }, required: ['title', 'count', 'ok'], additionalProperties: false },
  nested: {
    type: 'object',
    properties: {
      items: { type: 'array', minItems: 2, items: { type: 'object', properties: { id: { type: 'string', format: 'uuid' }, tags: { type: 'array', items: { enum: ['a', 'b'] } } }, required: ['id'] } },
      when: { type: 'string', format: 'date-time' },
    },
    required: ['items', 'when'],
  },
  nullable: { type: 'object', properties: { note: { anyOf: [{ type: 'string' }, { type: 'null' }] }, level: { type: ['integer', 'null'], exclusiveMinimum: 0 } }, required: ['note', 'level'] },
  refs: { type: 'object', $defs: { point: { type: 'object', properties: { x: { type: 'number', multipleOf: 0.5, minimum: 1 } }, required: ['x'] } }, properties: { a: { $ref: '#/$defs/point' }, k: { const: 'fixed' } }, required: ['a', 'k'] },
  allOf: { allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { properties: { b: { type: 'number' } }, required: ['b'] }] },
};

describe('sampleJsonValue', () => {
  for (const [name, schema] of Object.entries(schemas)) {
    it(`produces a value the ${name} schema accepts`, () => {
      const validate = new Ajv2020({ strict: false }).compile(schema);
      const value = sampleJsonValue(schema, { text: 'Summarise the project' });
      expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
    });
  }
});

describe('the embedded model in a task turn', () => {
  const submitTool = (schema: JSONObject) => ({ type: 'function', name: 'submit_result', parameters: wrapResultSchema(schema), strict: true });
  const user = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Summarise the project' }] };

  it('calls submit_result with a value that fits the wrapped schema', () => {
    const output = planEmbeddedResponse({ tools: [submitTool(schemas.nested!)], input: [user] });
    expect(output).toHaveLength(1);
    expect(output[0]).toMatchObject({ type: 'function_call', name: 'submit_result' });
    const args = JSON.parse(String(output[0]!.arguments)) as unknown;
    expect(new Ajv2020({ strict: false }).compile(wrapResultSchema(schemas.nested!))(args)).toBe(true);
  });

  it('answers in prose after a rejection, and submits again when asked to', () => {
    const call = { type: 'function_call', call_id: 'call_1', name: 'submit_result', arguments: '{"result":{}}' };
    const rejected = { type: 'function_call_output', call_id: 'call_1', output: 'Error (invalid_arguments): nope' };
    const prose = planEmbeddedResponse({ tools: [submitTool(schemas.flat!)], input: [user, call, rejected] });
    expect(prose[0]).toMatchObject({ type: 'message' });
    const repair = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'call submit_result now' }] };
    const again = planEmbeddedResponse({ tools: [submitTool(schemas.flat!)], input: [user, call, rejected, ...prose, repair] });
    expect(again[0]).toMatchObject({ type: 'function_call', name: 'submit_result', call_id: 'call_2' });
  });
});
