import { ToolRuntimeError } from '../errors.js';
import { isJSONObject, type JSONObject, type JSONValue } from '../json.js';
import {
  DESCRIBED,
  DROPPED,
  optionsAreExclusive,
  PROVIDER_ENFORCED,
  REFUSED,
  REFUSED_KEYWORD,
  STRUCTURAL,
  SUPPORTED_FORMATS,
  type RefusedKeyword,
} from './strict-keywords.js';

/**
 * Where a schema comes from, which decides what an object without `additionalProperties` means:
 * `zod` (as `zodToJSONSchema` writes it), where z.object drops unknown keys, so closing it keeps its
 * meaning, and an optional field becomes nullable (the model's `null` is read back as absent); or
 * `json` (a raw schema from outside, validated with ajv as written), where such an object is open and
 * an optional field has no read-back, so both are refused.
 */
export type StrictSchemaSource = 'zod' | 'json';

/** Options of `toStrictJSONSchema` and `convertToStrictJSONSchema`. */
export interface StrictSchemaOptions {
  /** Default `zod`. */
  source?: StrictSchemaSource;
}

/** Why a schema cannot go out in strict form. */
export interface StrictSchemaRefusal {
  /** Where, as a value path: `(root)`, `point`, `steps[].pair`, `$defs.Node.children[]`. */
  path: string;
  /** What the construct is and why strict mode cannot carry it. */
  construct: string;
  /** What the author can write instead. */
  wayOut: string;
  /** All three in one sentence. */
  message: string;
}

/** The outcome of a conversion. */
export type StrictSchemaConversion =
  | {
      ok: true;
      /** The schema to send with `strict: true`. */
      schema: JSONObject;
      /**
       * The same schema with the described constraints still in place (what our validation enforces
       * on top of the provider); differs from `schema` only by the keywords moved into descriptions.
       */
      enforced: JSONObject;
    }
  | { ok: false; refusal: StrictSchemaRefusal };

class Refused extends Error {
  constructor(readonly refusal: StrictSchemaRefusal) {
    super(refusal.message);
  }
}

interface Context {
  source: StrictSchemaSource;
  root: JSONObject;
  /** Keep described constraints as keywords (the `enforced` twin) instead of moving them into text. */
  keepDescribed: boolean;
}

/**
 * Converts a JSON Schema to the form OpenAI's strict function mode accepts, without changing what it
 * admits: every part ends up (1) represented exactly (closed objects with every property required;
 * an optional Zod field as a union with null, read back as absent; an exclusive `oneOf` as `anyOf`;
 * `$defs`/`$ref`, `enum`, `const`, `anyOf` as they are), (2) kept for the provider to enforce
 * (`pattern`, the supported `format`s, numeric bounds, `minItems`/`maxItems`), or (3) refused: a
 * tuple, a record, an object with extra keys, a value of any type, an overlapping `oneOf`... The
 * constraints strict mode does not take (`minLength`, `maxLength`, `default`...) move into the
 * description and stay enforced by our validation.
 *
 * Pure: never mutates `schema`. Never throws.
 */
export function convertToStrictJSONSchema(schema: JSONObject, options: StrictSchemaOptions = {}): StrictSchemaConversion {
  const source = options.source ?? 'zod';
  try {
    const converted = convertRoot(schema, { source, root: schema, keepDescribed: false });
    const enforced = convertRoot(schema, { source, root: schema, keepDescribed: true });
    return { ok: true, schema: converted, enforced };
  } catch (error) {
    if (error instanceof Refused) return { ok: false, refusal: error.refusal };
    throw error;
  }
}

/**
 * `convertToStrictJSONSchema`, for a tool author's schema: the strict form, or a definition error.
 *
 * @throws ToolRuntimeError `invalid_definition` naming the path, the construct and a way out when a
 *   part of the schema cannot be represented in strict mode.
 */
export function toStrictJSONSchema(schema: JSONObject, options: StrictSchemaOptions = {}): JSONObject {
  try {
    return convertRoot(schema, { source: options.source ?? 'zod', root: schema, keepDescribed: false });
  } catch (error) {
    if (error instanceof Refused) throw new ToolRuntimeError('invalid_definition', error.refusal.message);
    throw error;
  }
}

function convertRoot(schema: JSONObject, context: Context): JSONObject {
  const out = convert(schema, '', context);
  if (out.type !== 'object' || out.anyOf !== undefined) {
    refuse('', { construct: 'a root that is not one object', wayOut: 'wrap the parameters in one z.object' });
  }
  return out;
}

function refuse(path: string, refused: RefusedKeyword): never {
  const where = path === '' ? '(root)' : path;
  throw new Refused({
    path: where,
    construct: refused.construct,
    wayOut: refused.wayOut,
    message: `strict mode cannot represent ${where}: ${refused.construct}. Way out: ${refused.wayOut}.`,
  });
}

function join(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

function isObjectish(node: JSONObject): boolean {
  const type = node.type;
  return type === 'object' || (Array.isArray(type) && type.includes('object')) || node.properties !== undefined || node.additionalProperties !== undefined;
}

function convert(node: JSONValue | undefined, path: string, context: Context): JSONObject {
  if (node === false) refuse(path, REFUSED.never!);
  if (!isJSONObject(node)) refuse(path, REFUSED.any!);
  refuseWhatCannotBeSaid(node, path, context);

  const out: JSONObject = {};
  const described: string[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === 'oneOf' && Array.isArray(value)) {
      // Exclusive options (disjoint types, or a discriminator) accept the same values under anyOf.
      if (!optionsAreExclusive(value, context.root)) refuse(path, REFUSED.oneOf!);
      out.anyOf = [...(Array.isArray(out.anyOf) ? out.anyOf : []), ...value.map((option, i) => convert(option, `${path}<option ${i + 1}>`, context))];
    } else if (key === 'anyOf' && Array.isArray(value)) {
      out.anyOf = [...value.map((option, i) => convert(option, `${path}<option ${i + 1}>`, context)), ...(Array.isArray(out.anyOf) ? out.anyOf : [])];
    } else if (key === 'allOf') {
      // A single-member allOf is the member itself (zod writes it for a described or refined ref).
      if (!Array.isArray(value) || value.length !== 1) refuse(path, REFUSED.allOf!);
      Object.assign(out, convert(value[0], path, context));
    } else if (key === 'items') {
      out.items = convert(value, `${path}[]`, context);
    } else if (key === 'properties' || key === '$defs' || key === 'definitions') {
      out[key] = convertMap(value, key === 'properties' ? path : join(path, key), context);
    } else if (key === '$ref') {
      if (typeof value !== 'string' || !value.startsWith('#')) refuse(path, REFUSED.externalRef!);
      out.$ref = value;
    } else if (key === 'format' && typeof value === 'string' && !SUPPORTED_FORMATS.has(value)) {
      keepOrDescribe(out, described, key, value, context);
    } else if (STRUCTURAL.has(key) || PROVIDER_ENFORCED.has(key)) {
      out[key] = value;
    } else if (DESCRIBED.has(key)) {
      keepOrDescribe(out, described, key, value, context);
    }
    // Everything else is an annotation (DROPPED) or a keyword ajv ignores: no meaning is lost.
  }
  if (described.length > 0) {
    const base = typeof out.description === 'string' && out.description !== '' ? `${out.description} ` : '';
    out.description = `${base}(${described.join(', ')})`;
  }
  if (out.type === undefined && out.anyOf === undefined && out.$ref === undefined && out.enum === undefined && out.const === undefined) {
    refuse(path, isObjectish(out) ? REFUSED.untypedObject! : REFUSED.any!);
  }
  if ((out.type === 'array' || (Array.isArray(out.type) && out.type.includes('array'))) && out.items === undefined) {
    refuse(path, REFUSED.arrayWithoutItems!);
  }
  if (isObjectish(out)) closeObject(out, path, context);
  return out;
}

function keepOrDescribe(out: JSONObject, described: string[], key: string, value: JSONValue | undefined, context: Context): void {
  if (value === undefined) return;
  if (context.keepDescribed) {
    // `default` has no validation meaning; the twin keeps only what is checked.
    if (key !== 'default') out[key] = value;
  } else {
    described.push(`${key}: ${JSON.stringify(value)}`);
  }
}

/** Refuses the keywords and shapes whose meaning strict mode cannot carry, with the most telling reason first. */
function refuseWhatCannotBeSaid(node: JSONObject, path: string, context: Context): void {
  if (node.prefixItems !== undefined || Array.isArray(node.items)) refuse(path, REFUSED.prefixItems!);
  if (isObjectish(node)) {
    const extra = node.additionalProperties;
    const declared = isJSONObject(node.properties) ? Object.keys(node.properties).length : 0;
    const isRecord = node.propertyNames !== undefined || node.patternProperties !== undefined;
    if (extra !== undefined && extra !== false) refuse(path, isRecord || declared === 0 ? REFUSED.record! : REFUSED.loose!);
    if (isRecord) refuse(path, REFUSED.record!);
    if (extra === undefined && context.source === 'json') refuse(path, REFUSED.open!);
  }
  for (const key of Object.keys(node)) {
    const reason = REFUSED_KEYWORD[key];
    if (reason !== undefined && !DROPPED.has(key)) refuse(path, REFUSED[reason]!);
  }
}

function convertMap(value: JSONValue | undefined, path: string, context: Context): JSONObject {
  if (!isJSONObject(value)) return {};
  const out: JSONObject = {};
  for (const [name, schema] of Object.entries(value)) out[name] = convert(schema, join(path, name), context);
  return out;
}

function closeObject(out: JSONObject, path: string, context: Context): void {
  const properties = isJSONObject(out.properties) ? out.properties : {};
  const required = new Set(Array.isArray(out.required) ? out.required.filter((r): r is string => typeof r === 'string') : []);
  for (const name of required) {
    if (!Object.hasOwn(properties, name)) {
      refuse(join(path, name), { construct: 'a required field that is not declared in `properties`', wayOut: 'declare it in `properties`, or strict: false' });
    }
  }
  for (const [name, schema] of Object.entries(properties)) {
    if (required.has(name) || !isJSONObject(schema)) continue;
    if (context.source === 'json') {
      // Without a read-back, an optional field stays itself only when null already means something to it.
      if (!acceptsNull(schema)) refuse(join(path, name), REFUSED.optional!);
    } else {
      properties[name] = withNull(schema);
    }
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
  if (schema.const !== undefined) return schema.const === null;
  if (Array.isArray(schema.enum)) return schema.enum.includes(null);
  if (schema.type === 'null') return true;
  if (Array.isArray(schema.type) && schema.type.includes('null')) return true;
  if (Array.isArray(schema.anyOf)) return schema.anyOf.some((branch) => isJSONObject(branch) && acceptsNull(branch));
  return false;
}
