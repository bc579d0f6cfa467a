import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { JSONObject } from '../json.js';

/** A compiled raw schema, or why it could not be compiled. */
export type CompiledJsonSchema = { ok: true; validate: ValidateFunction } | { ok: false; message: string };

const options = { allErrors: true, strict: false, logger: false, validateFormats: false } as const;
let shared: Ajv2020 | undefined;

// Keyed on the schema object: a tool owner who keeps the schema in a module constant pays for
// compilation once per process, although tools are rebuilt every turn.
const compiled = new WeakMap<JSONObject, CompiledJsonSchema>();

/**
 * Compiles a tool's raw JSON Schema with ajv (draft 2020-12; a draft-07 `$schema` is read as
 * 2020-12, whose keywords it shares for tool parameters), once per schema object. Never throws:
 * a schema ajv rejects yields `{ ok: false, message }`.
 */
export function compileJsonSchema(schema: JSONObject): CompiledJsonSchema {
  const cached = compiled.get(schema);
  if (cached) return cached;
  let result: CompiledJsonSchema;
  const { $schema: _ignored, ...rest } = schema;
  try {
    shared ??= new Ajv2020(options);
    result = { ok: true, validate: compileIsolated(shared, rest) };
  } catch (error) {
    result = { ok: false, message: `the tool's JSON Schema cannot be compiled: ${(error as Error).message}` };
  }
  compiled.set(schema, result);
  return result;
}

function compileIsolated(ajv: Ajv2020, schema: JSONObject): ValidateFunction {
  try {
    return ajv.compile(schema);
  } catch (error) {
    // Two different schemas with the same `$id` cannot share one ajv instance: give this one its own.
    if (typeof schema.$id === 'string' && /already exists/.test((error as Error).message)) return new Ajv2020(options).compile(schema);
    throw error;
  }
}
