import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { loadOnFirstUse } from '../../src/load-on-first-use.js';
import { defineWorkerTool, isJSONObject, textResult, ToolRuntimeError, type JSONObject, type WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';

const loadAjv2020 = loadOnFirstUse<typeof import('ajv/dist/2020.js')>('ajv/dist/2020.js');

/** What an accepted submission carries in its result's details. */
export interface SubmittedResult {
  accepted: true;
  result: unknown;
}

function formatErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((error) => `- ${error.instancePath.slice(1).replace(/\//g, '.') || '(the value)'}: ${error.message ?? 'is invalid'}`).join('\n');
}

/**
 * The schema submit_result sends: a strict-compatible object whose one required property `result`
 * is the task's result schema. `$defs`/`definitions` move to the root so `#/$defs/...` references
 * keep resolving; `$schema`/`$id` are dropped from the nested copy.
 */
export function wrapResultSchema(resultSchema: JSONObject): JSONObject {
  const { $schema: _schema, $id: _id, $defs, definitions, ...inner } = resultSchema;
  const wrapper: JSONObject = { type: 'object', properties: { result: inner }, required: ['result'], additionalProperties: false };
  if ($defs !== undefined) wrapper.$defs = $defs;
  if (definitions !== undefined) wrapper.definitions = definitions;
  return wrapper;
}

/**
 * The workflow task's `submit_result`: strict, with a raw schema that wraps the task's result
 * schema (`context.turn.resultSchemaJson`). An accepted value terminates the turn and travels in
 * the details; a value the schema rejects returns the errors to the model and the turn goes on.
 *
 * @throws ToolRuntimeError `invalid_request` at assembly when the result schema is missing, not
 *   JSON, not an object, or not a schema ajv can compile.
 */
export function createSubmitResultTools(context: CategoryContext): WorkerAgentTool[] {
  const text = context.turn.resultSchemaJson;
  if (text.trim() === '') throw new ToolRuntimeError('invalid_request', 'a workflow task turn needs result_schema_json: the JSON Schema its submit_result wraps');
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (cause) {
    throw new ToolRuntimeError('invalid_request', `result_schema_json is not valid JSON: ${(cause as Error).message}`, { cause });
  }
  if (!isJSONObject(schema)) throw new ToolRuntimeError('invalid_request', 'result_schema_json must be a JSON Schema object');
  const jsonSchema = wrapResultSchema(schema);
  let validate: ValidateFunction;
  try {
    validate = new (loadAjv2020().Ajv2020)({ allErrors: true, strict: false }).compile(jsonSchema);
  } catch (cause) {
    throw new ToolRuntimeError('invalid_request', `result_schema_json is not a usable JSON Schema: ${(cause as Error).message}`, { cause });
  }
  const tool = defineWorkerTool<{ result: unknown }>({
    name: 'submit_result',
    description: "Submit the task's result. The task ends when a result that matches the schema is accepted; a rejected result comes back with the reasons so you can fix it.",
    jsonSchema,
    strict: true,
    executionMode: 'sequential',
    describeActivity: () => 'Submitting the result',
    describeCompletedActivity: (_params, result) => (result.terminate ? 'Submitted the result' : 'Result rejected'),
    async execute(params) {
      if (!validate(params)) {
        return textResult(`The result was rejected; it does not match the task's result schema:\n${formatErrors(validate.errors)}\nFix the value and call submit_result again.`, {
          details: { accepted: false, errors: validate.errors ?? [] },
        });
      }
      const details: SubmittedResult = { accepted: true, result: params.result };
      return textResult('Result accepted.', { details, terminate: true });
    },
  });
  return [tool];
}
