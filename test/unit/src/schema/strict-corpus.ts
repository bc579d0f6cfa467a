// The corpus the strict-mode tests share: one root object per construct, what our conversion does with
// it, and how OpenAI's own helper (`openai/helpers/zod`) compares. The design notes named here are the
// docs/tools.md's (section "Strict mode", "Where we differ from OpenAI's helper on purpose").
import { z } from 'zod';

/** Why our conversion and the helper's differ on purpose; each one is a design note in docs/tools.md. */
export type DesignNote =
  | 'optional as nullable'
  | 'defaults as nullable'
  | 'constraints strict mode does not take'
  | 'exclusive oneOf as anyOf'
  | 'values of any type'
  | 'overlapping oneOf'
  | 'transforms';

export interface CorpusEntry {
  name: string;
  schema: z.ZodType;
  /** Set when our conversion refuses the schema: the path and the start of the construct it names. */
  refused?: { path: string; construct: string };
  /** `same`: the helper's strict schema equals ours; `throws`: it refuses too; else the design note. */
  helper: 'same' | 'throws' | DesignNote;
  /** False where the property test cannot decide acceptance without a format checker (say why). */
  propertyTest?: false;
}

const tree: z.ZodType = z.object({ name: z.string(), children: z.array(z.lazy(() => tree)) });
const optionalTree: z.ZodType = z.object({ name: z.string(), children: z.array(z.lazy(() => optionalTree)).optional() });

export const corpus: CorpusEntry[] = [
  { name: 'optional fields', schema: z.object({ name: z.string(), nickname: z.string().optional(), age: z.number().int().optional() }), helper: 'optional as nullable' },
  {
    name: 'optional nested objects and array items',
    schema: z.object({
      owner: z.object({ name: z.string(), email: z.email().optional() }).optional(),
      steps: z.array(z.object({ run: z.string(), timeoutMs: z.number().int().min(1).optional() })),
    }),
    helper: 'optional as nullable',
  },
  { name: 'nullable', schema: z.object({ note: z.string().nullable(), count: z.number().nullable() }), helper: 'same' },
  { name: 'nullish', schema: z.object({ note: z.string().nullish() }), helper: 'same' },
  { name: 'defaults', schema: z.object({ mode: z.enum(['create', 'append']).default('create'), retries: z.number().int().min(0).default(2) }), helper: 'defaults as nullable' },
  { name: 'unions', schema: z.object({ value: z.union([z.string(), z.number()]), either: z.union([z.object({ a: z.string() }), z.object({ b: z.boolean() })]) }), helper: 'same' },
  {
    name: 'discriminated unions',
    schema: z.object({
      shape: z.discriminatedUnion('kind', [z.object({ kind: z.literal('circle'), r: z.number().min(0) }), z.object({ kind: z.literal('square'), side: z.number() })]),
    }),
    helper: 'same',
  },
  { name: 'intersections of objects', schema: z.object({ item: z.intersection(z.object({ id: z.string() }), z.object({ qty: z.number().int() })) }), helper: 'same' },
  {
    name: 'intersections with an optional field',
    schema: z.object({ item: z.intersection(z.object({ id: z.string() }), z.object({ note: z.string().optional() })) }),
    helper: 'optional as nullable',
  },
  { name: 'recursion', schema: z.object({ root: tree }), helper: 'same' },
  { name: 'recursion with an optional field', schema: z.object({ root: optionalTree }), helper: 'optional as nullable' },
  { name: 'enums and literals', schema: z.object({ level: z.enum(['low', 'high']), kind: z.literal('x'), code: z.union([z.literal(1), z.literal('one')]), flag: z.boolean() }), helper: 'same' },
  { name: 'string formats', schema: z.object({ email: z.email(), id: z.uuid(), at: z.iso.datetime(), ip: z.ipv4() }), helper: 'same' },
  { name: 'pattern', schema: z.object({ code: z.string().regex(/^[a-z]{2,4}$/) }), helper: 'same' },
  { name: 'numeric bounds', schema: z.object({ a: z.number().min(1).max(5), b: z.number().gt(0).lt(10), c: z.number().int().multipleOf(5), d: z.int32() }), helper: 'same' },
  { name: 'array bounds', schema: z.object({ tags: z.array(z.string()).min(1).max(3), pair: z.array(z.number()).length(2) }), helper: 'same' },
  { name: 'string lengths', schema: z.object({ code: z.string().min(2).max(4) }), helper: 'constraints strict mode does not take' },
  // ajv is run without a format checker: whether a string is a URL is Zod's alone to say.
  { name: 'a format strict mode does not support', schema: z.object({ link: z.url() }), helper: 'constraints strict mode does not take', propertyTest: false },
  { name: 'exclusive oneOf (z.xor of disjoint types)', schema: z.object({ value: z.xor([z.string(), z.number()]) }), helper: 'exclusive oneOf as anyOf' },
  { name: 'transforms', schema: z.object({ words: z.string().transform((text) => text.split(' ')) }), helper: 'transforms' },
  { name: 'tuples', schema: z.object({ at: z.tuple([z.number(), z.number()]) }), refused: { path: 'at', construct: 'a tuple (z.tuple' }, helper: 'throws' },
  { name: 'tuples with a rest', schema: z.object({ row: z.tuple([z.string()], z.number()) }), refused: { path: 'row', construct: 'a tuple (z.tuple' }, helper: 'throws' },
  { name: 'records', schema: z.object({ env: z.record(z.string(), z.string()) }), refused: { path: 'env', construct: 'a record (z.record' }, helper: 'throws' },
  { name: 'records with enum keys', schema: z.object({ limits: z.partialRecord(z.enum(['cpu', 'memory']), z.number()) }), refused: { path: 'limits', construct: 'a record (z.record' }, helper: 'throws' },
  { name: 'loose objects', schema: z.looseObject({ id: z.string() }), refused: { path: '(root)', construct: 'an object that keeps extra keys' }, helper: 'throws' },
  { name: 'catchall', schema: z.object({ meta: z.object({ id: z.string() }).catchall(z.number()) }), refused: { path: 'meta', construct: 'an object that keeps extra keys' }, helper: 'throws' },
  { name: 'values of any type', schema: z.object({ data: z.unknown() }), refused: { path: 'data', construct: 'a value of any type' }, helper: 'values of any type' },
  { name: 'overlapping oneOf (z.xor)', schema: z.object({ id: z.xor([z.string(), z.string().min(3)]) }), refused: { path: 'id', construct: 'an exclusive union whose options can overlap' }, helper: 'overlapping oneOf' },
  { name: 'intersections that do not merge', schema: z.object({ code: z.intersection(z.string().min(2), z.string().max(5)) }), refused: { path: 'code', construct: 'an intersection that does not merge' }, helper: 'throws' },
];
