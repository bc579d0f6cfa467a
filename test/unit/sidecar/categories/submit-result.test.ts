import { describe, expect, it } from 'vitest';
import { isToolRuntimeError, type Logger } from '../../../../src/index.js';
import { validateToolArguments } from '../../../../src/arguments/validate-tool-arguments.js';
import { createSubmitResultTools } from '../../../../sidecar/categories/submit-result.js';
import { callTool, testConfig, testContext } from './tool-harness.js';

const config = testConfig({ workspace: '/tmp', stateDir: '/tmp' });
const resultSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: { city: { type: 'string' }, population: { $ref: '#/definitions/count' } },
  required: ['city', 'population'],
  additionalProperties: false,
  definitions: { count: { type: 'integer', minimum: 0 } },
};

describe('submit_result', () => {
  const [tool] = createSubmitResultTools(testContext(config, { kind: 'workflow_task', resultSchemaJson: JSON.stringify(resultSchema) }));

  it('is strict and wraps the task schema as the required `result`', () => {
    expect(tool!.strict).toBe(true);
    expect(tool!.jsonSchema).toEqual({
      type: 'object',
      properties: { result: { type: 'object', properties: resultSchema.properties, required: ['city', 'population'], additionalProperties: false } },
      required: ['result'],
      additionalProperties: false,
      definitions: resultSchema.definitions,
    });
  });

  it('terminates the turn with an accepted value in the details', async () => {
    const call = await callTool(tool!, { result: { city: 'Lyon', population: 522_000 } });
    expect(call.result.terminate).toBe(true);
    expect(call.result.details).toEqual({ accepted: true, result: { city: 'Lyon', population: 522_000 } });
  });

  it('returns the validation errors and keeps the turn going for a rejected value', async () => {
    const call = await callTool(tool!, { result: { city: 'Lyon', population: -1 } });
    expect(call.result.terminate).toBeFalsy();
    expect(call.text).toContain('- result.population: must be >= 0');
  });

  it('goes through the shared argument validator as a raw-schema tool', () => {
    const outcome = validateToolArguments(tool!, '{"result": {"city": "Lyon", "population": 3}}');
    expect(outcome.ok && outcome.value).toEqual({ result: { city: 'Lyon', population: 3 } });
    const extra = validateToolArguments(tool!, '{"result": {"city": "Lyon", "population": 3}, "more": 1}');
    expect(extra.ok).toBe(false);
  });

  it('fails assembly with invalid_request for a missing or invalid schema', () => {
    for (const resultSchemaJson of ['', '{not json', '[1]', '{"type": 12}']) {
      let caught: unknown;
      try {
        createSubmitResultTools(testContext(config, { kind: 'workflow_task', resultSchemaJson }));
      } catch (error) {
        caught = error;
      }
      expect(isToolRuntimeError(caught, 'invalid_request'), resultSchemaJson).toBe(true);
    }
  });

  describe('a result schema strict mode cannot represent', () => {
    function recordingLogger(): Logger & { warnings: Array<{ message: string; fields?: Record<string, unknown> }> } {
      const warnings: Array<{ message: string; fields?: Record<string, unknown> }> = [];
      const ignore = () => undefined;
      return { warnings, debug: ignore, info: ignore, error: ignore, warn: (message, fields) => warnings.push({ message, fields }) };
    }
    function submitTool(resultSchema: object, logger?: Logger) {
      const tools = createSubmitResultTools(testContext(config, { kind: 'workflow_task', turnId: 'task-7', resultSchemaJson: JSON.stringify(resultSchema) }), { logger });
      return tools[0]!;
    }

    it('goes out non-strict, the reason logged and carried in the definition, and extra keys still arrive', async () => {
      const logger = recordingLogger();
      const open = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
      const tool = submitTool(open, logger);
      expect(tool.strict).toBe(false);
      expect(tool.jsonSchema).toEqual({ type: 'object', properties: { result: open }, required: ['result'], additionalProperties: false });
      expect(tool.strictNote).toMatch(/^submit_result is sent with strict: false because strict mode cannot represent result: an open object/);
      expect(tool.strictNote).toContain('Way out: add `additionalProperties: false`');
      expect(logger.warnings).toEqual([{ message: 'result schema sent non-strict', fields: expect.objectContaining({ turnId: 'task-7', path: 'result' }) }]);
      const call = await callTool(tool, { result: { city: 'Lyon', country: 'FR' } });
      expect(call.result.details).toEqual({ accepted: true, result: { city: 'Lyon', country: 'FR' } });
    });

    it.each([
      ['a record', { type: 'object', properties: { scores: { type: 'object', additionalProperties: { type: 'number' } } }, required: ['scores'], additionalProperties: false }, 'result.scores: a record'],
      ['a tuple', { type: 'object', properties: { at: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], items: false } }, required: ['at'], additionalProperties: false }, 'result.at: a tuple'],
      ['an optional field', { type: 'object', properties: { note: { type: 'string' } }, additionalProperties: false }, 'result.note: an optional field that cannot be null'],
      ['a value of any type', { type: 'object', properties: { data: {} }, required: ['data'], additionalProperties: false }, 'result.data: a value of any type'],
    ])('names %s in the note', (_label, resultSchema, expected) => {
      const tool = submitTool(resultSchema);
      expect(tool.strict).toBe(false);
      expect(tool.strictNote).toContain(`strict mode cannot represent ${expected}`);
    });

    it('stays strict where strict mode can carry it, and still checks what only the description tells the model', async () => {
      const logger = recordingLogger();
      const tool = submitTool(
        {
          type: 'object',
          properties: { code: { type: 'string', minLength: 3, pattern: '^[A-Z]+$' }, shape: { oneOf: [{ type: 'string' }, { type: 'number' }] }, note: { type: ['string', 'null'] } },
          required: ['code', 'shape'],
          additionalProperties: false,
        },
        logger,
      );
      expect(tool.strict).toBe(true);
      expect(tool.strictNote).toBeUndefined();
      expect(logger.warnings).toEqual([]);
      expect((tool.jsonSchema!.properties as Record<string, unknown>).result).toEqual({
        type: 'object',
        properties: { code: { type: 'string', pattern: '^[A-Z]+$', description: '(minLength: 3)' }, shape: { anyOf: [{ type: 'string' }, { type: 'number' }] }, note: { type: ['string', 'null'] } },
        required: ['code', 'shape', 'note'],
        additionalProperties: false,
      });
      const short = await callTool(tool, { result: { code: 'AB', shape: 1, note: null } });
      expect(short.result.terminate).toBeFalsy();
      expect(short.text).toContain('- result.code: must NOT have fewer than 3 characters');
      const good = await callTool(tool, { result: { code: 'ABC', shape: 1, note: null } });
      expect(good.result.details).toEqual({ accepted: true, result: { code: 'ABC', shape: 1, note: null } });
    });
  });
});
