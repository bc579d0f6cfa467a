// The `arguments` suite: how fast validateToolArguments turns a model's arguments string into
// params, on clean input (against a bare JSON.parse of the same string) and on input that needs
// each repair step (against the clean validation). Same run, same machine, so ratios are fair.
import { z } from 'zod';
import { defineWorkerTool, textResult, validateToolArguments, type RepairStep, type WorkerAgentTool } from '../../src/index.js';
import { opsPerSecond, type BenchRow, type BenchSuite } from '../bench-row.js';

const MEASURE_MS = 500;

/** A typical five-field tool: two required strings, an enum with a default, two optional fields. */
const schema = z.object({
  path: z.string().min(1),
  content: z.string(),
  mode: z.enum(['create', 'append', 'overwrite']).default('create'),
  executable: z.boolean().optional(),
  tags: z.array(z.string()).optional(),
});
const execute = async () => textResult('ok');
const tool = defineWorkerTool({ name: 'write_file', description: 'Writes a file.', schema, execute });
const strictTool = defineWorkerTool({ name: 'write_file', description: 'Writes a file.', strict: true, schema, execute });

const clean = JSON.stringify({ path: 'src/app.ts', content: 'export const answer = 42;\n', mode: 'overwrite', executable: false, tags: ['ts', 'app'] });

interface Variant {
  name: string;
  tool: WorkerAgentTool;
  input: string;
  /** The repairs the input must take, checked before timing so a row measures what it says. */
  repairs: RepairStep[];
  ok: boolean;
}

const variants: Variant[] = [
  { name: 'validate strict, nulls for optional fields', tool: strictTool, input: JSON.stringify({ path: 'a.ts', content: 'x', mode: null, executable: null, tags: null }), repairs: ['null_to_absent'], ok: true },
  { name: 'validate empty arguments', tool, input: '', repairs: ['empty_to_object'], ok: false },
  { name: 'validate double-encoded', tool, input: JSON.stringify(clean), repairs: ['unwrap_double_encoded'], ok: true },
  { name: 'validate code-fenced', tool, input: `Here you go:\n\`\`\`json\n${clean}\n\`\`\`\n`, repairs: ['extract_code_fence'], ok: true },
  { name: 'validate prose + balanced object', tool, input: `I will write the file now. ${clean} Let me know.`, repairs: ['extract_balanced_object'], ok: true },
  { name: 'validate truncated (jsonrepair)', tool, input: clean.slice(0, clean.indexOf('"app"') + 3), repairs: ['jsonrepair'], ok: true },
];

function check(variant: Pick<Variant, 'name' | 'tool' | 'input' | 'repairs' | 'ok'>): void {
  const result = validateToolArguments(variant.tool, variant.input);
  if (result.ok !== variant.ok || JSON.stringify(result.repairs) !== JSON.stringify(variant.repairs)) {
    throw new Error(`bench arguments: "${variant.name}" took ${JSON.stringify(result)}, expected ok=${variant.ok} repairs=${JSON.stringify(variant.repairs)}`);
  }
}

/** Runs the suite: one clean row against JSON.parse, then one row per repair path against clean. */
export const run: BenchSuite = async () => {
  check({ name: 'clean', tool, input: clean, repairs: [], ok: true });
  for (const variant of variants) check(variant);

  let sink = 0;
  const parseOps = opsPerSecond(() => {
    sink += (JSON.parse(clean) as object) ? 1 : 0;
  }, MEASURE_MS);
  const cleanOps = opsPerSecond(() => {
    sink += validateToolArguments(tool, clean).ok ? 1 : 0;
  }, MEASURE_MS);
  const rows: BenchRow[] = [
    {
      suite: 'arguments',
      name: 'validate clean five-field args',
      value: cleanOps,
      unit: 'ops/s',
      reference: `bare JSON.parse: ${Math.round(parseOps).toLocaleString('en-US')} ops/s`,
      ratio: cleanOps / parseOps,
      note: `${(1e6 / cleanOps).toFixed(2)} µs/call; ratio = validate / JSON.parse`,
    },
  ];
  for (const variant of variants) {
    const ops = opsPerSecond(() => {
      sink += validateToolArguments(variant.tool, variant.input).ok ? 1 : 0;
    }, MEASURE_MS);
    rows.push({
      suite: 'arguments',
      name: variant.name,
      value: ops,
      unit: 'ops/s',
      reference: 'validate clean five-field args',
      ratio: ops / cleanOps,
      note: `${(1e6 / ops).toFixed(2)} µs/call; ${variant.repairs.join(' + ')}${variant.ok ? '' : ' (then invalid: required fields)'}`,
    });
  }
  if (sink < 0) console.log(sink);
  return rows;
};
