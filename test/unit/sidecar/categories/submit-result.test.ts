import { describe, expect, it } from 'vitest';
import { isToolRuntimeError } from '../../../../src/index.js';
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
});
