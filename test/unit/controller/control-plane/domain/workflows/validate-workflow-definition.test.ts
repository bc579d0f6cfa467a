import { describe, expect, it } from 'vitest';
import { isControlPlaneError } from '../../../../../../controller/control-plane/domain/control-plane-error.js';
import {
  defaultWorkflowLimits,
  parseWorkflowFile,
  validateWorkflowDefinition,
  type WorkflowDefinitionInput,
} from '../../../../../../controller/control-plane/domain/workflows/validate-workflow-definition.js';

const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
const task = (id: string, extra: Record<string, unknown> = {}) => ({ id, prompt: `do ${id}`, result_schema: schema, ...extra });

function refusal(input: WorkflowDefinitionInput, limits = defaultWorkflowLimits) {
  try {
    validateWorkflowDefinition(input, limits);
  } catch (error) {
    if (!isControlPlaneError(error)) throw error;
    return { code: error.controlCode, message: error.message };
  }
  throw new Error('the definition was accepted');
}

describe('validateWorkflowDefinition', () => {
  it('accepts a good definition and fills the defaults', () => {
    const definition = validateWorkflowDefinition({ name: ' report ', tasks: [task('a'), task('b', { depends_on: ['a'], max_attempts: 3 })] });
    expect(definition).toEqual({
      name: 'report',
      maxParallel: defaultWorkflowLimits.defaultMaxParallel,
      tasks: [
        { id: 'a', prompt: 'do a', resultSchema: schema, dependsOn: [], maxAttempts: 2 },
        { id: 'b', prompt: 'do b', resultSchema: schema, dependsOn: ['a'], maxAttempts: 3 },
      ],
    });
  });

  it('accepts result schemas given as JSON text (the proto form)', () => {
    const definition = validateWorkflowDefinition({ name: 'x', tasks: [task('a', { result_schema: JSON.stringify(schema) })] });
    expect(definition.tasks[0]?.resultSchema).toEqual(schema);
  });

  it('refuses repeated ids', () => {
    expect(refusal({ name: 'x', tasks: [task('a'), task('a')] })).toEqual({ code: 'invalid_request', message: 'invalid workflow: task id "a" is used more than once; ids must be unique' });
  });

  it('refuses an unknown dependency and a task depending on itself', () => {
    const { message } = refusal({ name: 'x', tasks: [task('a', { depends_on: ['ghost'] }), task('b', { depends_on: ['b'] })] });
    expect(message).toContain('task "a" depends on "ghost", which is not a task of this workflow');
    expect(message).toContain('task "b" depends on itself');
  });

  it('refuses a cycle and names it', () => {
    const { message } = refusal({ name: 'x', tasks: [task('a', { depends_on: ['c'] }), task('b', { depends_on: ['a'] }), task('c', { depends_on: ['b'] }), task('d')] });
    expect(message).toMatch(/the dependencies form a cycle: a → c → b → a/);
  });

  it('refuses result schemas that are not a JSON Schema object that compiles', () => {
    const notObject = refusal({ name: 'x', tasks: [task('a', { result_schema: ['type', 'object'] })] });
    expect(notObject.message).toContain('task "a": "result_schema" must be a JSON Schema object');
    const badJson = refusal({ name: 'x', tasks: [task('a', { result_schema: '{"type":' })] });
    expect(badJson.message).toContain('"result_schema" is not valid JSON');
    const noCompile = refusal({ name: 'x', tasks: [task('a', { result_schema: { type: 'objekt' } })] });
    expect(noCompile.message).toContain('task "a": "result_schema" does not compile');
  });

  it('refuses what passes the limits, with limit_exceeded', () => {
    const limits = { ...defaultWorkflowLimits, maxTasks: 2, maxPromptChars: 10, maxSchemaChars: 40, maxParallel: 3, maxAttempts: 4 };
    expect(refusal({ name: 'x', tasks: [task('a'), task('b'), task('c')] }, limits)).toMatchObject({ code: 'limit_exceeded', message: expect.stringContaining('3 tasks; at most 2') });
    const { code, message } = refusal(
      { name: 'x', maxParallel: 9, tasks: [task('a', { prompt: 'a'.repeat(11), max_attempts: 5 }), task('b', { result_schema: { ...schema, description: 'x'.repeat(50) } })] },
      limits,
    );
    expect(code).toBe('limit_exceeded');
    expect(message).toContain('"max_parallel" is 9; at most 3');
    expect(message).toContain('the prompt is 11 characters; at most 10');
    expect(message).toContain('"max_attempts" is 5; at most 4');
    expect(message).toMatch(/task "b": "result_schema" is \d+ characters of JSON; at most 40/);
  });

  it('refuses malformed fields with messages that say what is expected', () => {
    const { message } = refusal({ name: '', tasks: [{ id: 'bad id!', prompt: '', result_schema: schema, depends_on: 'a', extra: 1 }] });
    expect(message).toContain('"name" must be a non-empty string');
    expect(message).toContain('tasks[0] has unknown field "extra"');
    expect(message).toContain('tasks[0].id must be 1-64 letters');
    expect(message).toContain('"prompt" must be a non-empty string');
    expect(message).toContain('"depends_on" must be an array of task ids');
    expect(message.includes('\n')).toBe(false);
  });
});

describe('parseWorkflowFile', () => {
  it('reads the file form and refuses what is not JSON or has unknown fields', () => {
    expect(parseWorkflowFile(JSON.stringify({ name: 'f', max_parallel: 2, tasks: [task('a')] })).maxParallel).toBe(2);
    expect(() => parseWorkflowFile('{ name: f }')).toThrow(/the workflow file is not JSON/);
    expect(() => parseWorkflowFile(JSON.stringify({ name: 'f', tasks: [task('a')], steps: [] }))).toThrow(/unknown field "steps"/);
  });
});

describe('checkSubmittedResult', () => {
  it('checks the value against the persisted schema text and bounds its size', async () => {
    const { checkSubmittedResult } = await import('../../../../../../controller/control-plane/domain/workflows/check-submitted-result.js');
    const persisted = JSON.stringify(schema);
    expect(checkSubmittedResult(persisted, { ok: true })).toEqual({ ok: true, resultJson: '{"ok":true}' });
    expect(checkSubmittedResult(persisted, { ok: 'yes' })).toEqual({ ok: false, reasons: 'ok: expected boolean, got string "yes"' });
    expect(checkSubmittedResult(persisted, undefined)).toEqual({ ok: false, reasons: 'no value was submitted' });
    expect(checkSubmittedResult(persisted, { ok: true, pad: 'x'.repeat(50) }, { maxResultChars: 40 })).toMatchObject({ ok: false, reasons: expect.stringContaining('at most 40') });
    expect(checkSubmittedResult('{not json', { ok: true })).toMatchObject({ ok: false, reasons: expect.stringContaining('not JSON') });
  });
});
