// The property strict mode must keep: for every value the model could send, the strict schema and the
// Zod schema agree on whether it is accepted (after the model's null is read back as absent). Values
// are generated from the strict schema itself, mostly well-formed, with wrong types, out-of-bound
// numbers, short and long strings and arrays, nulls and extra keys mixed in at every depth.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { convertToStrictJSONSchema, defineWorkerTool, isJSONObject, textResult, zodToJSONSchema, type JSONObject, type JSONValue } from '../../../../src/index.js';
import { validateToolArguments } from '../../../../src/arguments/validate-tool-arguments.js';
import { corpus } from './strict-corpus.js';

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: false });
const execute = async () => textResult('ok');

/** Anything at all, for the wrong-type branch. */
const noise: fc.Arbitrary<JSONValue> = fc.oneof(
  fc.constant<JSONValue>(null),
  fc.boolean(),
  fc.integer({ min: -1000, max: 1000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }),
  fc.string({ maxLength: 6 }),
  fc.constant<JSONValue>([]),
  fc.constant<JSONValue>({}),
  fc.constant<JSONValue>({ unexpected: 1 }),
);

function resolve(ref: string, root: JSONObject): JSONObject {
  let target: JSONValue | undefined = root;
  for (const part of ref.slice(2).split('/')) target = isJSONObject(target) ? target[part] : undefined;
  if (!isJSONObject(target)) throw new Error(`unresolvable ${ref}`);
  return target;
}

function numberArbitrary(schema: JSONObject, integer: boolean): fc.Arbitrary<JSONValue> {
  const bound = (key: string) => (typeof schema[key] === 'number' && Math.abs(schema[key] as number) < 1e9 ? (schema[key] as number) : undefined);
  const numbers = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].map(bound).filter((n): n is number => n !== undefined);
  const low = Math.min(-5, ...numbers) - 2;
  const high = Math.max(5, ...numbers) + 2;
  const inLow = bound('minimum') ?? (bound('exclusiveMinimum') ?? low - 1) + 1;
  const inHigh = bound('maximum') ?? (bound('exclusiveMaximum') ?? high + 1) - 1;
  const step = typeof schema.multipleOf === 'number' ? schema.multipleOf : 1;
  // Mostly in bounds (on the step), then the edges, then anything around them.
  const options: fc.WeightedArbitrary<JSONValue>[] = [
    { arbitrary: fc.integer({ min: Math.ceil(inLow / step), max: Math.max(Math.ceil(inLow / step), Math.floor(inHigh / step)) }).map((k) => k * step), weight: 4 },
    { arbitrary: fc.integer({ min: Math.ceil(low), max: Math.floor(high) }), weight: 1 },
    { arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true, min: low, max: high }), weight: 1 },
  ];
  if (numbers.length > 0) options.push({ arbitrary: fc.constantFrom(...numbers.flatMap((n) => [n - 1, n, n + 1])), weight: 1 });
  if (!integer) options.push({ arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true, min: inLow, max: inHigh }), weight: 2 });
  return fc.oneof(...options);
}

function stringArbitrary(schema: JSONObject): fc.Arbitrary<JSONValue> {
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : 8;
  const options: fc.WeightedArbitrary<JSONValue>[] = [
    { arbitrary: fc.string({ maxLength: 8 }), weight: 1 },
    { arbitrary: fc.string({ minLength: Math.max(0, min - 1), maxLength: max + 1 }), weight: 2 },
  ];
  // Strings of the pattern mostly, or all four formats would rarely hold at once.
  if (typeof schema.pattern === 'string') options.push({ arbitrary: fc.stringMatching(new RegExp(schema.pattern)), weight: 8 });
  return fc.oneof(...options);
}

/** Values for one node of the strict schema: mostly of its shape, sometimes anything. */
function valuesFor(schema: JSONObject, root: JSONObject, depth: number): fc.Arbitrary<JSONValue> {
  const shaped = shapedFor(schema, root, depth);
  return depth === 0 ? shaped : fc.oneof({ arbitrary: shaped, weight: 12 }, { arbitrary: noise, weight: 1 });
}

function shapedFor(schema: JSONObject, root: JSONObject, depth: number): fc.Arbitrary<JSONValue> {
  if (typeof schema.$ref === 'string') return shapedFor(resolve(schema.$ref, root), root, depth);
  if (Array.isArray(schema.anyOf)) return fc.oneof(...schema.anyOf.filter(isJSONObject).map((branch) => shapedFor(branch, root, depth)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return fc.oneof(...types.map((type) => typedFor(type as string, schema, root, depth)));
}

function typedFor(type: string, schema: JSONObject, root: JSONObject, depth: number): fc.Arbitrary<JSONValue> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return numberArbitrary(schema, true);
    case 'number':
      return numberArbitrary(schema, false);
    case 'string':
      return stringArbitrary(schema);
    case 'array': {
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
      if (depth > 3) return fc.constant([]);
      const max = (typeof schema.maxItems === 'number' ? schema.maxItems : 2) + 1;
      return fc.array(valuesFor(schema.items as JSONObject, root, depth + 1), { minLength: Math.min(Math.max(0, min - 1), max), maxLength: max });
    }
    case 'object': {
      const properties = isJSONObject(schema.properties) ? schema.properties : {};
      const shape: Record<string, fc.Arbitrary<JSONValue>> = {};
      for (const [name, child] of Object.entries(properties)) shape[name] = valuesFor(child as JSONObject, root, depth + 1);
      // Every declared key present (what strict mode makes the model send), now and then one more.
      return fc.tuple(fc.record(shape), fc.option(fc.constantFrom('extra', 'constructor'), { freq: 8 })).map(([value, extra]) => (extra === null ? value : { ...value, [extra]: 1 }));
    }
    default:
      throw new Error(`no generator for type ${type}`);
  }
}

describe('strict conversion: the strict schema and the Zod schema accept the same values', () => {
  for (const entry of corpus.filter((candidate) => candidate.refused === undefined && candidate.propertyTest !== false)) {
    it(entry.name, () => {
      const conversion = convertToStrictJSONSchema(zodToJSONSchema(entry.schema));
      if (!conversion.ok) throw new Error(conversion.refusal.message);
      const tool = defineWorkerTool({ name: 'probe', description: 'Probe.', strict: true, schema: entry.schema, execute });
      // The described constraints are checked on our side: the twin that keeps them is the contract.
      const strictAccepts: ValidateFunction = ajv.compile(conversion.enforced);
      let accepted = 0;
      let rejected = 0;
      fc.assert(
        fc.property(valuesFor(conversion.enforced, conversion.enforced, 0), (value) => {
          const strict = strictAccepts(value);
          const ours = validateToolArguments(tool, JSON.stringify(value));
          if (strict) accepted++;
          else rejected++;
          expect({ value, accepted: ours.ok, error: ours.ok ? undefined : ours.error.message }).toMatchObject({ accepted: strict });
        }),
        { numRuns: 300, seed: 15 },
      );
      // Both sides of the property were exercised, not just one.
      expect(accepted).toBeGreaterThan(0);
      expect(rejected).toBeGreaterThan(0);
    });
  }
});

describe('strict conversion: what strict mode cannot represent is refused, naming the path, the construct and a way out', () => {
  for (const entry of corpus.filter((candidate) => candidate.refused !== undefined)) {
    it(entry.name, () => {
      const conversion = convertToStrictJSONSchema(zodToJSONSchema(entry.schema));
      expect(conversion.ok).toBe(false);
      if (conversion.ok) return;
      expect(conversion.refusal.path).toBe(entry.refused!.path);
      expect(conversion.refusal.construct.startsWith(entry.refused!.construct)).toBe(true);
      expect(conversion.refusal.message).toBe(`strict mode cannot represent ${entry.refused!.path}: ${conversion.refusal.construct}. Way out: ${conversion.refusal.wayOut}.`);
      expect(conversion.refusal.wayOut).toMatch(/or `strict: false`$/);
      expect(() => defineWorkerTool({ name: 'probe', description: 'Probe.', strict: true, schema: entry.schema, execute })).toThrow(
        `tool "probe": ${conversion.refusal.message}`,
      );
    });
  }
});
