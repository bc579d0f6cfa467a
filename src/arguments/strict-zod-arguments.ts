import type { z } from 'zod';
import { isJSONObject } from '../json.js';

/** What `prepareStrictArguments` found and changed. */
export interface StrictArgumentsResult {
  /** The value with `null` removed where the Zod schema says the field is optional. */
  value: unknown;
  /** True when at least one `null` was turned into absent. */
  nullsRemoved: boolean;
  /** Paths (`a.b[0].c`) of fields the schema does not declare. */
  unknownFields: string[];
}

/** What the walk reads from zod v4's internals (`schema._zod.def`). */
interface ZodInternals {
  _zod: {
    def: {
      type: string;
      shape?: Record<string, z.ZodType>;
      innerType?: z.ZodType;
      element?: z.ZodType;
      valueType?: z.ZodType;
      options?: z.ZodType[];
      items?: z.ZodType[];
      in?: z.ZodType;
      left?: z.ZodType;
      right?: z.ZodType;
      getter?: () => z.ZodType;
    };
    optin?: string;
  };
}

const WRAPPERS = new Set(['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch', 'nonoptional', 'success']);

/**
 * Brings a strict tool's arguments back to what its Zod schema expects: the model writes `null`
 * for an optional field (strict mode's spelling), `execute` must see it absent, so one Zod schema
 * serves both sides. Walks the schema and the value together, at every depth; a field whose schema
 * accepts `null` itself keeps it. When `rejectUnknownFields`, lists fields the schema does not
 * declare (the strict schema said `additionalProperties: false`).
 *
 * Copies only what it changes; never mutates `value`. May throw RangeError on absurd nesting
 * through a recursive (`z.lazy`) schema: the caller catches it.
 */
export function prepareStrictArguments(schema: z.ZodType, value: unknown, options: { rejectUnknownFields: boolean }): StrictArgumentsResult {
  const state = { nullsRemoved: false, unknownFields: [] as string[], reject: options.rejectUnknownFields };
  const out = walk(schema, value, '', state);
  return { value: out, nullsRemoved: state.nullsRemoved, unknownFields: state.unknownFields };
}

interface WalkState {
  nullsRemoved: boolean;
  unknownFields: string[];
  reject: boolean;
}

function internals(schema: z.ZodType): ZodInternals['_zod'] {
  return (schema as unknown as ZodInternals)._zod;
}

function walk(schema: z.ZodType, value: unknown, path: string, state: WalkState): unknown {
  const def = internals(schema).def;
  if (WRAPPERS.has(def.type) && def.innerType) return walk(def.innerType, value, path, state);
  switch (def.type) {
    case 'pipe':
      return def.in ? walk(def.in, value, path, state) : value;
    case 'lazy':
      return def.getter ? walk(def.getter(), value, path, state) : value;
    case 'object':
      return isJSONObject(value) && def.shape ? walkObject(def.shape, value, path, state) : value;
    case 'array':
      return Array.isArray(value) && def.element ? walkArray(value, () => def.element as z.ZodType, path, state) : value;
    case 'tuple':
      return Array.isArray(value) && def.items ? walkArray(value, (i) => def.items?.[i], path, state) : value;
    case 'record':
      return isJSONObject(value) && def.valueType ? walkRecord(def.valueType, value, path, state) : value;
    case 'union':
      return def.options ? walkUnion(def.options, value, path, state) : value;
    case 'intersection': {
      // An intersection of objects goes out as one merged object (as zod writes it): walk it as one.
      const shape = shapeOf(schema);
      return isJSONObject(value) && shape ? walkObject(shape, value, path, state) : value;
    }
    default:
      return value;
  }
}

/** The fields of an object schema, or of an intersection of objects merged; undefined otherwise. */
function shapeOf(schema: z.ZodType, depth = 0): Record<string, z.ZodType> | undefined {
  if (depth > 32) return undefined;
  const def = internals(schema).def;
  if (def.type === 'object') return def.shape;
  if (def.type === 'intersection' && def.left && def.right) {
    const left = shapeOf(def.left, depth + 1);
    const right = shapeOf(def.right, depth + 1);
    return left && right ? { ...left, ...right } : undefined;
  }
  if (def.type === 'pipe') return def.in ? shapeOf(def.in, depth + 1) : undefined;
  if (def.type === 'lazy') return def.getter ? shapeOf(def.getter(), depth + 1) : undefined;
  if ((def.type === 'readonly' || def.type === 'nonoptional') && def.innerType) return shapeOf(def.innerType, depth + 1);
  return undefined;
}

function walkObject(shape: Record<string, z.ZodType>, value: Record<string, unknown>, path: string, state: WalkState): unknown {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    // `hasOwn`: a model's `constructor` or `__proto__` key must not find Object.prototype's members.
    const field = Object.hasOwn(shape, key) ? shape[key] : undefined;
    const fieldPath = path === '' ? key : `${path}.${key}`;
    if (field === undefined) {
      if (state.reject) state.unknownFields.push(fieldPath);
      continue;
    }
    const current = value[key];
    if (current === null && internals(field).optin !== undefined && !acceptsNull(field)) {
      out ??= { ...value };
      delete out[key];
      state.nullsRemoved = true;
      continue;
    }
    const next = walk(field, current, fieldPath, state);
    if (next !== current) {
      out ??= { ...value };
      out[key] = next;
    }
  }
  return out ?? value;
}

function walkArray(value: unknown[], itemSchema: (index: number) => z.ZodType | undefined, path: string, state: WalkState): unknown {
  let out: unknown[] | undefined;
  for (let i = 0; i < value.length; i++) {
    const schema = itemSchema(i);
    if (schema === undefined) continue;
    const next = walk(schema, value[i], `${path}[${i}]`, state);
    if (next !== value[i]) {
      out ??= [...value];
      out[i] = next;
    }
  }
  return out ?? value;
}

function walkRecord(valueType: z.ZodType, value: Record<string, unknown>, path: string, state: WalkState): unknown {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const next = walk(valueType, value[key], path === '' ? key : `${path}.${key}`, state);
    if (next !== value[key]) {
      out ??= { ...value };
      out[key] = next;
    }
  }
  return out ?? value;
}

/**
 * A union takes the first option under which the prepared value parses without undeclared fields;
 * else the first under which it parses at all, reporting its undeclared fields (each strict option
 * was a closed object, so Zod's stripping must not make them acceptable); when none parses, the
 * value goes to Zod untouched (its union error says more than a guess would).
 */
function walkUnion(options: z.ZodType[], value: unknown, path: string, state: WalkState): unknown {
  let fallback: { next: unknown; trial: WalkState } | undefined;
  for (const option of options) {
    const trial: WalkState = { nullsRemoved: false, unknownFields: [], reject: state.reject };
    const next = walk(option, value, path, trial);
    if (!option.safeParse(next).success) continue;
    if (trial.unknownFields.length === 0) {
      state.nullsRemoved ||= trial.nullsRemoved;
      return next;
    }
    fallback ??= { next, trial };
  }
  if (fallback) {
    state.nullsRemoved ||= fallback.trial.nullsRemoved;
    state.unknownFields.push(...fallback.trial.unknownFields);
    return fallback.next;
  }
  return value;
}

/** True when the schema itself accepts `null` (then `null` is a value, not "absent"). */
function acceptsNull(schema: z.ZodType): boolean {
  const def = internals(schema).def;
  switch (def.type) {
    case 'null':
    case 'nullable':
    case 'any':
    case 'unknown':
      return true;
    case 'union':
      return (def.options ?? []).some(acceptsNull);
    case 'intersection':
      return def.left !== undefined && def.right !== undefined && acceptsNull(def.left) && acceptsNull(def.right);
    case 'pipe':
      return def.in ? acceptsNull(def.in) : false;
    case 'lazy':
      return def.getter ? acceptsNull(def.getter()) : false;
    default:
      return WRAPPERS.has(def.type) && def.innerType ? acceptsNull(def.innerType) : false;
  }
}
