/**
 * A value that fits a JSON Schema, for the embedded scripted model's task turns. Deterministic and
 * best effort: it reads the common keywords (type, enum, const, default, examples, properties,
 * required, items, prefixItems, anyOf/oneOf/allOf, $ref into the root, string and number bounds,
 * a few formats); a `pattern` it cannot satisfy yields a plain string.
 */
import { isJSONObject, type JSONObject, type JSONValue } from '../../src/index.js';

/** Options of `sampleJsonValue`. */
export interface SampleOptions {
  /** The document `$ref`s point into (default: the schema itself). */
  root?: JSONObject;
  /** The text strings are made from (e.g. the task's prompt), cut to the string's bounds. */
  text?: string;
}

const MAX_DEPTH = 12;

/** Returns a value `schema` accepts (best effort, see the module note). Never throws. */
export function sampleJsonValue(schema: unknown, options: SampleOptions = {}): JSONValue {
  const root = options.root ?? (isJSONObject(schema) ? schema : {});
  return sample(schema, root, options.text ?? 'example', 0);
}

function resolveRef(ref: string, root: JSONObject): unknown {
  if (!ref.startsWith('#')) return {};
  let current: unknown = root;
  for (const part of ref.slice(1).split('/').filter(Boolean)) {
    const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
    current = isJSONObject(current) ? current[key] : undefined;
  }
  return current ?? {};
}

function sample(schema: unknown, root: JSONObject, text: string, depth: number): JSONValue {
  if (schema === true || !isJSONObject(schema) || depth > MAX_DEPTH) return null;
  if (typeof schema.$ref === 'string') return sample({ ...(resolveRef(schema.$ref, root) as JSONObject), ...without(schema, '$ref') }, root, text, depth + 1);
  if ('const' in schema) return schema.const as JSONValue;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0] as JSONValue;
  if ('default' in schema) return schema.default as JSONValue;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0] as JSONValue;
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    const merged = schema.allOf.reduce<JSONObject>((all, part) => mergeSchemas(all, isJSONObject(part) ? part : {}), without(schema, 'allOf'));
    return sample(merged, root, text, depth + 1);
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) {
      // Prefer a branch that is not null, so optional values show.
      const branch = branches.find((item) => !(isJSONObject(item) && item.type === 'null')) ?? branches[0];
      return sample(mergeSchemas(without(schema, key), isJSONObject(branch) ? branch : {}), root, text, depth + 1);
    }
  }
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [guessType(schema)] : [schema.type];
  const type = types.find((item) => item !== 'null') ?? types[0];
  switch (type) {
    case 'object':
      return sampleObject(schema, root, text, depth);
    case 'array':
      return sampleArray(schema, root, text, depth);
    case 'integer':
    case 'number':
      return sampleNumber(schema, type === 'integer');
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return sampleString(schema, text);
  }
}

function without(schema: JSONObject, key: string): JSONObject {
  const { [key]: _dropped, ...rest } = schema;
  return rest;
}

function mergeSchemas(a: JSONObject, b: JSONObject): JSONObject {
  const merged: JSONObject = { ...a, ...b };
  if (isJSONObject(a.properties) || isJSONObject(b.properties)) {
    merged.properties = { ...(isJSONObject(a.properties) ? a.properties : {}), ...(isJSONObject(b.properties) ? b.properties : {}) };
  }
  if (Array.isArray(a.required) || Array.isArray(b.required)) {
    merged.required = [...new Set([...(Array.isArray(a.required) ? a.required : []), ...(Array.isArray(b.required) ? b.required : [])])];
  }
  return merged;
}

function guessType(schema: JSONObject): string {
  if (isJSONObject(schema.properties) || Array.isArray(schema.required)) return 'object';
  if (schema.items !== undefined || Array.isArray(schema.prefixItems)) return 'array';
  if (typeof schema.minimum === 'number' || typeof schema.maximum === 'number') return 'number';
  return 'string';
}

function sampleObject(schema: JSONObject, root: JSONObject, text: string, depth: number): JSONObject {
  const properties = isJSONObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const result: JSONObject = {};
  for (const [key, value] of Object.entries(properties)) result[key] = sample(value, root, `${key}: ${text}`, depth + 1);
  for (const key of required) if (!(key in result)) result[key] = sample(isJSONObject(schema.additionalProperties) ? schema.additionalProperties : {}, root, text, depth + 1);
  const min = typeof schema.minProperties === 'number' ? schema.minProperties : 0;
  for (let index = Object.keys(result).length; index < min; index++) {
    result[`key${index + 1}`] = sample(isJSONObject(schema.additionalProperties) ? schema.additionalProperties : {}, root, text, depth + 1);
  }
  return result;
}

function sampleArray(schema: JSONObject, root: JSONObject, text: string, depth: number): JSONValue[] {
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
  const items = schema.items === false ? undefined : schema.items;
  const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
  const max = typeof schema.maxItems === 'number' ? schema.maxItems : Number.POSITIVE_INFINITY;
  const count = Math.min(Math.max(min, prefix.length, items === undefined ? 0 : 1), max);
  const result: JSONValue[] = [];
  for (let index = 0; index < count; index++) {
    const itemSchema = index < prefix.length ? prefix[index] : items;
    let value = sample(itemSchema, root, `${text} ${index + 1}`, depth + 1);
    // uniqueItems: vary numbers and strings so repeated samples differ.
    if (schema.uniqueItems === true && index > 0) value = typeof value === 'number' ? value + index : typeof value === 'string' ? `${value} ${index + 1}` : value;
    result.push(value);
  }
  return result;
}

function sampleNumber(schema: JSONObject, integer: boolean): number {
  const minimum = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + (integer ? 1 : 0.5) : undefined;
  const maximum = typeof schema.maximum === 'number' ? schema.maximum : typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - (integer ? 1 : 0.5) : undefined;
  let value = minimum ?? (maximum !== undefined ? Math.min(0, maximum) : integer ? 1 : 1.5);
  if (integer) value = Math.ceil(value);
  const multiple = typeof schema.multipleOf === 'number' && schema.multipleOf > 0 ? schema.multipleOf : undefined;
  if (multiple) value = Math.ceil(value / multiple) * multiple;
  return value;
}

const formats: Record<string, string> = {
  'date-time': '2026-01-01T00:00:00Z',
  date: '2026-01-01',
  time: '00:00:00Z',
  email: 'someone@example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  uuid: '00000000-0000-4000-8000-000000000000',
  hostname: 'example.com',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
};

function sampleString(schema: JSONObject, text: string): string {
  if (typeof schema.format === 'string' && formats[schema.format]) return formats[schema.format]!;
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : 120;
  let value = text.replace(/\s+/g, ' ').trim() || 'example';
  while (value.length < min) value += ` ${value}`;
  return [...value].slice(0, Math.max(min, Math.min(max, 120))).join('');
}
