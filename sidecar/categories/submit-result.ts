import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { loadOnFirstUse } from '../../src/load-on-first-use.js';
import {
  convertToStrictJSONSchema,
  defineWorkerTool,
  isJSONObject,
  textResult,
  ToolRuntimeError,
  type JSONObject,
  type Logger,
  type WorkerAgentTool,
} from '../../src/index.js';
import type { CategoryContext } from './category.js';

const loadAjv2020 = loadOnFirstUse<typeof import('ajv/dist/2020.js')>('ajv/dist/2020.js');

/** How many compiled result schemas stay cached (a workflow's tasks and their retries share a few). */
const COMPILED_SCHEMA_CACHE = 64;
let sharedAjv: import('ajv/dist/2020.js').Ajv2020 | undefined;
const compiledSchemas = new Map<string, { schema: JSONObject; validate: ValidateFunction }>();

/**
 * Compiles a wrapped result schema with one shared Ajv, cached by the schema's text: a new Ajv per
 * task turn cost tens to hundreds of milliseconds on the turn's open. The least recently used entry
 * is dropped from the cache and from Ajv beyond `COMPILED_SCHEMA_CACHE`, so a long-lived sidecar's
 * memory stays bounded. Throws what Ajv throws for a schema it cannot compile.
 */
function compileResultSchema(schema: JSONObject): ValidateFunction {
  const key = JSON.stringify(schema);
  const cached = compiledSchemas.get(key);
  if (cached) {
    compiledSchemas.delete(key);
    compiledSchemas.set(key, cached);
    return cached.validate;
  }
  const ajv = (sharedAjv ??= new (loadAjv2020().Ajv2020)({ allErrors: true, strict: false }));
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    ajv.removeSchema(schema);
    throw error;
  }
  compiledSchemas.set(key, { schema, validate });
  if (compiledSchemas.size > COMPILED_SCHEMA_CACHE) {
    const [oldestKey, oldest] = compiledSchemas.entries().next().value as [string, { schema: JSONObject }];
    compiledSchemas.delete(oldestKey);
    ajv.removeSchema(oldest.schema);
  }
  return validate;
}

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

/** Options of `createSubmitResultTools`. */
export interface SubmitResultOptions {
  /** Where a result schema strict mode cannot represent is reported (warn). */
  logger?: Logger;
}

/**
 * The workflow task's `submit_result`, whose raw schema wraps the task's result schema
 * (`context.turn.resultSchemaJson`). Strict when strict mode can represent the wrapper without
 * changing what it admits (`convertToStrictJSONSchema` with `source: 'json'`; constraints strict mode
 * does not take move into descriptions); otherwise sent with `strict: false`, the reason logged and
 * carried as the tool's `strictNote`. Either way the value is validated against the whole result
 * schema: an accepted value terminates the turn and travels in the details; a value the schema
 * rejects returns the errors to the model and the turn goes on.
 *
 * @throws ToolRuntimeError `invalid_request` at assembly when the result schema is missing, not
 *   JSON, not an object, or not a schema ajv can compile.
 */
export function createSubmitResultTools(context: CategoryContext, options: SubmitResultOptions = {}): WorkerAgentTool[] {
  const text = context.turn.resultSchemaJson;
  if (text.trim() === '') throw new ToolRuntimeError('invalid_request', 'a workflow task turn needs result_schema_json: the JSON Schema its submit_result wraps');
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (cause) {
    throw new ToolRuntimeError('invalid_request', `result_schema_json is not valid JSON: ${(cause as Error).message}`, { cause });
  }
  if (!isJSONObject(schema)) throw new ToolRuntimeError('invalid_request', 'result_schema_json must be a JSON Schema object');
  const wrapped = wrapResultSchema(schema);
  let validate: ValidateFunction;
  try {
    validate = compileResultSchema(wrapped);
  } catch (cause) {
    throw new ToolRuntimeError('invalid_request', `result_schema_json is not a usable JSON Schema: ${(cause as Error).message}`, { cause });
  }
  // The wire schema may leave constraints to the description; `validate` above checks them all.
  const conversion = convertToStrictJSONSchema(wrapped, { source: 'json' });
  let strictNote: string | undefined;
  if (!conversion.ok) {
    strictNote = `submit_result is sent with strict: false because ${conversion.refusal.message}`;
    options.logger?.warn('result schema sent non-strict', {
      agentId: context.turn.agentId,
      turnId: context.turn.turnId,
      path: conversion.refusal.path,
      reason: conversion.refusal.message,
    });
  }
  const tool = defineWorkerTool<{ result: unknown }>({
    name: 'submit_result',
    description: "Submit the task's result. The task ends when a result that matches the schema is accepted; a rejected result comes back with the reasons so you can fix it.",
    jsonSchema: conversion.ok ? conversion.schema : wrapped,
    strict: conversion.ok,
    ...(strictNote !== undefined ? { strictNote } : {}),
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
