// What OpenAI's strict mode does with each JSON Schema keyword, as `toStrictJSONSchema` applies it.
// Source: OpenAI's structured-outputs guide, "Supported schemas" / "Supported properties"
// (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas).
import { isJSONObject, type JSONObject, type JSONValue } from '../json.js';

/** Structural keywords strict mode accepts; kept (their child schemas converted). */
export const STRUCTURAL = new Set(['type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf', '$ref', '$defs', 'definitions', 'description', 'title']);

/** Constraints strict mode enforces itself: kept for the provider (the guide's "supported properties"). */
export const PROVIDER_ENFORCED = new Set(['pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems']);

/** The string formats strict mode supports; any other `format` is described instead. */
export const SUPPORTED_FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']);

/**
 * Constraints strict mode does not take: moved into the description for the model to read, and
 * enforced by our own validation (Zod or ajv) before `execute` runs.
 */
export const DESCRIBED = new Set(['minLength', 'maxLength', 'uniqueItems', 'minProperties', 'maxProperties', 'default']);

/** Annotations without validation meaning: dropped. */
export const DROPPED = new Set(['$schema', '$id', '$comment', 'examples', 'readOnly', 'writeOnly', 'deprecated', 'contentSchema']);

/** What a keyword strict mode cannot represent is, and the way out a tool author can take. */
export interface RefusedKeyword {
  construct: string;
  wayOut: string;
}

const STRICT_FALSE = 'or `strict: false`';

/** Keywords whose meaning strict mode cannot carry: the schema is refused (or sent non-strict at run time). */
export const REFUSED: Record<string, RefusedKeyword> = {
  prefixItems: {
    construct: 'a tuple (z.tuple, `prefixItems`): strict mode has one schema for every array item, so the model could not send the fixed positions',
    wayOut: `an object with a named field per position, such as {x, y} for [x, y], ${STRICT_FALSE}`,
  },
  additionalItems: {
    construct: 'a tuple (`items` as a list, `additionalItems`): strict mode has one schema for every array item',
    wayOut: `an object with a named field per position, such as {x, y} for [x, y], ${STRICT_FALSE}`,
  },
  record: {
    construct: 'a record (z.record, `additionalProperties` with a schema, `propertyNames`, `patternProperties`): strict mode closes every object, so the model could only send {}',
    wayOut: `an array of {key, value} objects, ${STRICT_FALSE}`,
  },
  loose: {
    construct: 'an object that keeps extra keys (z.looseObject, .passthrough(), .catchall(), `additionalProperties` other than false): strict mode closes every object, so the extra keys could never arrive',
    wayOut: `declare every key (z.object or z.strictObject), ${STRICT_FALSE}`,
  },
  open: {
    construct: 'an open object (no `additionalProperties: false`, so JSON Schema allows any extra key): strict mode closes every object',
    wayOut: `add \`additionalProperties: false\` if extra keys are not wanted, ${STRICT_FALSE}`,
  },
  optional: {
    construct: 'an optional field that cannot be null (in `properties`, not in `required`): strict mode requires every field, and a null would fail this schema',
    wayOut: `list the field in \`required\` and let it be null (\`"type": ["string", "null"]\`), ${STRICT_FALSE}`,
  },
  any: {
    construct: 'a value of any type (z.unknown, z.any, `{}`): strict mode needs a type for every value',
    wayOut: `give it a type (for free-form data, a string holding JSON text), ${STRICT_FALSE}`,
  },
  never: {
    construct: 'a schema no value satisfies (z.never, `false`, `not`)',
    wayOut: `remove the field, ${STRICT_FALSE}`,
  },
  oneOf: {
    construct: 'an exclusive union whose options can overlap (z.xor, `oneOf`): strict mode only has `anyOf`, which would accept a value matching two options',
    wayOut: `z.union (any option may match) or z.discriminatedUnion, ${STRICT_FALSE}`,
  },
  allOf: {
    construct: 'an intersection that does not merge into one object (z.intersection, `allOf`)',
    wayOut: `merge the parts into one object (z.object(...).extend(...)), ${STRICT_FALSE}`,
  },
  untypedObject: {
    construct: 'object keywords without `"type": "object"` (JSON Schema then also admits strings, numbers...): strict mode needs a type for every value',
    wayOut: `add \`"type": "object"\`, ${STRICT_FALSE}`,
  },
  arrayWithoutItems: {
    construct: 'an array without an item schema: strict mode needs one',
    wayOut: `give the array an item type, ${STRICT_FALSE}`,
  },
  binary: {
    construct: 'binary content (z.file, `contentEncoding`, `contentMediaType`): JSON arguments cannot carry it',
    wayOut: `a string (a path, a URL or base64 text), ${STRICT_FALSE}`,
  },
  externalRef: {
    construct: 'a `$ref` outside the schema: strict mode resolves only local references',
    wayOut: `inline the referenced schema under \`$defs\`, ${STRICT_FALSE}`,
  },
  nullable: {
    construct: 'the OpenAPI `nullable` keyword',
    wayOut: `write \`"type": [T, "null"]\`, ${STRICT_FALSE}`,
  },
  conditional: {
    construct: 'a conditional or dependent schema (`if`/`then`/`else`, `dependentRequired`, `dependentSchemas`, `dependencies`)',
    wayOut: `one object whose fields say what they need in their descriptions, ${STRICT_FALSE}`,
  },
  evaluation: {
    construct: 'an evaluation keyword (`contains`, `minContains`, `maxContains`, `unevaluatedProperties`, `unevaluatedItems`, dynamic references)',
    wayOut: `a plain object or array schema, ${STRICT_FALSE}`,
  },
};

/** Which entry of `REFUSED` a keyword falls under, when it is refused on its own. */
export const REFUSED_KEYWORD: Record<string, keyof typeof REFUSED> = {
  prefixItems: 'prefixItems',
  additionalItems: 'additionalItems',
  propertyNames: 'record',
  patternProperties: 'record',
  not: 'never',
  contentEncoding: 'binary',
  contentMediaType: 'binary',
  nullable: 'nullable',
  if: 'conditional',
  then: 'conditional',
  else: 'conditional',
  dependentRequired: 'conditional',
  dependentSchemas: 'conditional',
  dependencies: 'conditional',
  contains: 'evaluation',
  minContains: 'evaluation',
  maxContains: 'evaluation',
  unevaluatedProperties: 'evaluation',
  unevaluatedItems: 'evaluation',
  $dynamicRef: 'evaluation',
  $dynamicAnchor: 'evaluation',
  $recursiveRef: 'evaluation',
  $recursiveAnchor: 'evaluation',
  $anchor: 'evaluation',
};

/**
 * True when no value can satisfy two of the `oneOf` options at once, so `anyOf` means the same:
 * options of disjoint JSON types, or objects told apart by a required field's `const`/`enum`
 * (what z.discriminatedUnion writes). Conservative: false when it cannot tell.
 */
export function optionsAreExclusive(options: readonly JSONValue[], root: JSONObject): boolean {
  const resolved = options.map((option) => resolveLocal(option, root));
  for (let i = 0; i < resolved.length; i++) {
    for (let j = i + 1; j < resolved.length; j++) {
      const a = resolved[i];
      const b = resolved[j];
      if (!isJSONObject(a) || !isJSONObject(b)) return false;
      if (!typesDisjoint(a, b) && !discriminated(a, b)) return false;
    }
  }
  return true;
}

function resolveLocal(schema: JSONValue | undefined, root: JSONObject): JSONValue | undefined {
  let current = schema;
  for (let hops = 0; hops < 16 && isJSONObject(current) && typeof current.$ref === 'string'; hops++) {
    const ref = current.$ref;
    if (!ref.startsWith('#/')) return undefined;
    let target: JSONValue | undefined = root;
    for (const part of ref.slice(2).split('/')) {
      const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
      target = isJSONObject(target) && Object.hasOwn(target, key) ? target[key] : undefined;
    }
    current = target;
  }
  return current;
}

/** The JSON types a schema admits, when its `type`, `const` or `enum` says; undefined when unknown. */
function typesOf(schema: JSONObject): Set<string> | undefined {
  if (schema.const !== undefined) return new Set([jsonType(schema.const)]);
  if (Array.isArray(schema.enum)) return new Set(schema.enum.map(jsonType));
  if (typeof schema.type === 'string') return new Set([schema.type]);
  if (Array.isArray(schema.type)) return new Set(schema.type.filter((t): t is string => typeof t === 'string'));
  return undefined;
}

function jsonType(value: JSONValue): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value === 'object' ? 'object' : typeof value;
}

function typesDisjoint(a: JSONObject, b: JSONObject): boolean {
  const left = typesOf(a);
  const right = typesOf(b);
  if (!left || !right) return false;
  const widen = (types: Set<string>) => (types.has('number') ? new Set([...types, 'integer']) : types);
  const wideLeft = widen(left);
  const wideRight = widen(right);
  return ![...wideLeft].some((type) => wideRight.has(type));
}

function discriminated(a: JSONObject, b: JSONObject): boolean {
  if (!isJSONObject(a.properties) || !isJSONObject(b.properties) || !Array.isArray(a.required) || !Array.isArray(b.required)) return false;
  const requiredB = new Set(b.required);
  for (const key of a.required) {
    if (typeof key !== 'string' || !requiredB.has(key)) continue;
    const left = literalValues(a.properties[key]);
    const right = literalValues(b.properties[key]);
    if (left && right && !left.some((value) => right.some((other) => JSON.stringify(other) === JSON.stringify(value)))) return true;
  }
  return false;
}

function literalValues(schema: JSONValue | undefined): JSONValue[] | undefined {
  if (!isJSONObject(schema)) return undefined;
  if (schema.const !== undefined) return [schema.const];
  if (Array.isArray(schema.enum)) return schema.enum;
  return undefined;
}
