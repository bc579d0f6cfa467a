import { isJSONObject, type JSONObject, type JSONValue } from '../json.js';

/** Keywords OpenAI's strict mode accepts and we keep as they are (after converting their children). */
const KEPT = new Set(['type', 'description', 'title', 'enum', 'const', '$ref', '$defs', 'definitions', 'anyOf', 'items', 'properties', 'required', 'additionalProperties']);

/** Constraints strict mode rejects; we fold them into the description so the model still reads them. */
const FOLDED = [
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'default',
] as const;

/**
 * Converts a JSON Schema (as `zodToJSONSchema` produces it) to one OpenAI's strict function mode
 * accepts: every object lists all its properties in `required` and says `additionalProperties:
 * false`, at every depth; a property that was optional becomes a union with `null`; `oneOf` becomes
 * `anyOf`; `$schema` and rejected keywords are dropped, constraints (`minLength`, `maximum`,
 * `default`...) folded into the description. `$defs`/`$ref`, `enum`, `const`, `anyOf` stay.
 *
 * Pure: returns a new object and never mutates `schema`. Does not throw.
 */
export function toStrictJSONSchema(schema: JSONObject): JSONObject {
  return convert(schema);
}

function convert(node: JSONObject): JSONObject {
  const out: JSONObject = {};
  const folded: string[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === 'oneOf' && Array.isArray(value)) {
      out.anyOf = [...(Array.isArray(out.anyOf) ? out.anyOf : []), ...value.map(convertValue)];
    } else if (key === 'anyOf' && Array.isArray(value)) {
      out.anyOf = [...value.map(convertValue), ...(Array.isArray(out.anyOf) ? out.anyOf : [])];
    } else if (key === 'allOf' && Array.isArray(value) && value.length === 1 && isJSONObject(value[0])) {
      // A single-member allOf is the member itself (zod emits it for refined or described refs).
      Object.assign(out, convert(value[0]));
    } else if ((FOLDED as readonly string[]).includes(key)) {
      if (isMeaningfulBound(key, value)) folded.push(`${key}: ${JSON.stringify(value)}`);
    } else if (KEPT.has(key)) {
      out[key] = key === 'properties' || key === '$defs' || key === 'definitions' ? convertMap(value) : convertValue(value);
    }
    // Everything else ($schema, not, if/then/else, propertyNames, patternProperties, prefixItems,
    // examples, $id, $comment...) is dropped: strict mode rejects it.
  }
  if (folded.length > 0) {
    const base = typeof out.description === 'string' && out.description !== '' ? `${out.description} ` : '';
    out.description = `${base}(${folded.join(', ')})`;
  }
  if (out.type === 'object' || isJSONObject(out.properties)) makeObjectStrict(out);
  return out;
}

function convertValue(value: JSONValue | undefined): JSONValue {
  if (Array.isArray(value)) return value.map(convertValue);
  if (isJSONObject(value)) return convert(value);
  return value ?? null;
}

function convertMap(value: JSONValue | undefined): JSONValue {
  if (!isJSONObject(value)) return value ?? null;
  const out: JSONObject = {};
  for (const [name, schema] of Object.entries(value)) out[name] = isJSONObject(schema) ? convert(schema) : schema;
  return out;
}

function makeObjectStrict(out: JSONObject): void {
  const properties = isJSONObject(out.properties) ? out.properties : {};
  const required = new Set(Array.isArray(out.required) ? out.required.filter((r): r is string => typeof r === 'string') : []);
  for (const [name, schema] of Object.entries(properties)) {
    if (!required.has(name) && isJSONObject(schema)) properties[name] = withNull(schema);
  }
  out.properties = properties;
  out.required = Object.keys(properties);
  out.additionalProperties = false;
}

/** The schema, also accepting `null` (how strict mode spells an optional field). */
function withNull(schema: JSONObject): JSONObject {
  if (acceptsNull(schema)) return schema;
  const type = schema.type;
  const simple = schema.enum === undefined && schema.const === undefined && schema.anyOf === undefined && schema.$ref === undefined;
  if (simple && typeof type === 'string') return { ...schema, type: [type, 'null'] };
  if (simple && Array.isArray(type)) return { ...schema, type: [...type, 'null'] };
  if (Array.isArray(schema.anyOf) && Object.keys(schema).every((k) => k === 'anyOf' || k === 'description')) {
    return { ...schema, anyOf: [...schema.anyOf, { type: 'null' }] };
  }
  const { description, ...rest } = schema;
  return description === undefined ? { anyOf: [rest, { type: 'null' }] } : { anyOf: [rest, { type: 'null' }], description };
}

function acceptsNull(schema: JSONObject): boolean {
  if (schema.type === 'null') return true;
  if (Array.isArray(schema.type) && schema.type.includes('null') && schema.enum === undefined) return true;
  if (Array.isArray(schema.anyOf)) return schema.anyOf.some((branch) => isJSONObject(branch) && acceptsNull(branch));
  return false;
}

/** zod writes ±MAX_SAFE_INTEGER bounds for every `.int()`: noise, not a constraint worth telling. */
function isMeaningfulBound(key: string, value: JSONValue | undefined): boolean {
  if (value === undefined) return false;
  if ((key === 'minimum' || key === 'maximum') && typeof value === 'number') return Math.abs(value) !== Number.MAX_SAFE_INTEGER;
  return true;
}
