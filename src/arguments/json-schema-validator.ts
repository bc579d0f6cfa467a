import type { Ajv, ValidateFunction } from 'ajv';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { JSONObject } from '../json.js';
import { loadOnFirstUse } from '../load-on-first-use.js';

// ajv is loaded with the first raw schema: most turns only have zod schemas.
const loadAjv = loadOnFirstUse<typeof import('ajv')>('ajv');
const loadAjv2020 = loadOnFirstUse<typeof import('ajv/dist/2020.js')>('ajv/dist/2020.js');

/** A compiled raw schema, or why it could not be compiled. */
export type CompiledJsonSchema = { ok: true; validate: ValidateFunction } | { ok: false; message: string };

type AnyAjv = Ajv | Ajv2020;

const options = { allErrors: true, strict: false, logger: false, validateFormats: false } as const;
let draft2020: Ajv2020 | undefined;
let draft07: Ajv | undefined;

// Keyed on the schema object: a tool owner who keeps the schema in a module constant pays for
// compilation once per process, although tools are rebuilt every turn.
const compiled = new WeakMap<JSONObject, CompiledJsonSchema>();

/**
 * Compiles a tool's raw JSON Schema with ajv, once per schema object: draft-07 (and older) when its
 * `$schema` says so, else draft 2020-12 (what zod and OpenAI write). Formats are not checked (the
 * owner's service does that). Never throws: a schema ajv rejects yields `{ ok: false, message }`.
 */
export function compileJsonSchema(schema: JSONObject): CompiledJsonSchema {
  const cached = compiled.get(schema);
  if (cached) return cached;
  let result: CompiledJsonSchema;
  // The dialect picks the ajv class; `$schema` itself is dropped so ajv does not look it up.
  const { $schema, ...rest } = schema;
  const legacy = typeof $schema === 'string' && /draft-0[4-7]/.test($schema);
  try {
    const ajv = legacy ? (draft07 ??= new (loadAjv().Ajv)(options)) : (draft2020 ??= new (loadAjv2020().Ajv2020)(options));
    result = { ok: true, validate: compileIsolated(ajv, rest, legacy) };
  } catch (error) {
    result = { ok: false, message: `the tool's JSON Schema cannot be compiled: ${(error as Error).message}` };
  }
  compiled.set(schema, result);
  return result;
}

function compileIsolated(ajv: AnyAjv, schema: JSONObject, legacy: boolean): ValidateFunction {
  try {
    return ajv.compile(schema);
  } catch (error) {
    // Two different schemas with the same `$id` cannot share one ajv instance: give this one its own.
    if (typeof schema.$id === 'string' && /already exists/.test((error as Error).message)) {
      return (legacy ? new (loadAjv().Ajv)(options) : new (loadAjv2020().Ajv2020)(options)).compile(schema);
    }
    throw error;
  }
}
