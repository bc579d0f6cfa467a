// `npm run bench`: runs every suite in order and prints one table. Ratios compare with a reference
// measured in the same run, so the shared machine's noise affects both sides alike.
import type { BenchRow, BenchSuite } from './bench-row.js';

const suites: Array<[string, () => Promise<{ run: BenchSuite }>]> = [
  // Each suite registers here, in the order the table shows them.
  ['arguments', () => import('./suites/arguments.js')],
  ['sidecar', () => import('./suites/sidecar.js')],
  ['controller', () => import('./suites/controller.js')],
  ['model-server', () => import('./suites/model-server.js')],
  ['workflows', () => import('./suites/workflows.js')],
  ['schedules', () => import('./suites/schedules.js')],
  ['faults', () => import('./suites/faults.js')],
  ['startup', () => import('./suites/startup.js')],
  ['brain', () => import('./suites/brain.js')],
  ['fleet', () => import('./suites/fleet.js')],
  ['telemetry', () => import('./suites/telemetry.js')],
  ['sandbox', () => import('./suites/sandbox.js')],
  ['files', () => import('./suites/files.js')],
  ['sessions', () => import('./suites/sessions.js')],
  ['mcp', () => import('./suites/mcp.js')],
  ['journal', () => import('./suites/journal.js')],
];

function format(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toPrecision(3);
}

const only = process.argv.slice(2);
// Suites that run only when named (`npm run bench -- faults`): they check promises, not speed.
const onlyWhenNamed = new Set(['faults']);
const rows: BenchRow[] = [];
for (const [name, load] of suites) {
  if (only.length > 0 ? !only.includes(name) : onlyWhenNamed.has(name)) continue;
  process.stderr.write(`bench: running ${name}...\n`);
  const { run } = await load();
  rows.push(...(await run()));
}

const header = ['suite', 'measurement', 'value', 'unit', 'reference (same run)', 'ratio', 'note'];
const table = rows.map((r) => [
  r.suite,
  r.name,
  format(r.value),
  r.unit,
  r.reference ?? '',
  r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}×`,
  r.note ?? '',
]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => (row[i] ?? '').length)));
const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
console.log(line(header));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const row of table) console.log(line(row));
