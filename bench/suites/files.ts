// The file tools' costs, over real gRPC through a sidecar child (default sandbox policy):
// - apply_patch with 50 hunks into a 10,000-line file, against write_file of the same result, in
//   the same run (each call alternates between two versions, so every call really changes the file);
// - what one edit costs the model in JSON, apply_patch against edit_file on the same change: the
//   function_call item it sends and the function_call_output it receives, byte for byte as the
//   Responses API carries them; the same for three edits of one file (one patch, three edit_file
//   calls); and each tool's definition, which the model receives with every request.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startSidecar } from '../../test/fixtures/start-sidecar.js';
import { createClient, openTurn, textOf, type TurnDriver } from '../../test/integration/sidecar/turn-driver.js';
import { quantile, type BenchRow } from '../bench-row.js';

const RUNS = Number(process.env.BENCH_FILES_RUNS ?? 30);
const LINES = 10_000;
const HUNKS = 50;

/** A 10,000-line file and a 50-hunk patch from it to `changed`. */
function bigFile() {
  const original = Array.from({ length: LINES }, (_, index) => `    value_${index} = compute(${index}, "${'abcdefghij'.slice(index % 10)}")`);
  const changed = original.map((line, index) => (index % 200 === 100 ? `${line}  # reviewed` : line));
  const patch = (from: string[], to: string[]) => {
    const body: string[] = [];
    for (let hunk = 0; hunk < HUNKS; hunk++) {
      const at = hunk * 200 + 100;
      body.push('@@', ...[1, 2, 3].map((k) => ` ${from[at - 4 + k]}`), `-${from[at]}`, `+${to[at]}`, ...[1, 2, 3].map((k) => ` ${from[at + k]}`));
    }
    return ['*** Begin Patch', '*** Update File: big.py', ...body, '*** End Patch'].join('\n');
  };
  return { original: `${original.join('\n')}\n`, changed: `${changed.join('\n')}\n`, forward: patch(original, changed) };
}

/** A 200-line module and the same edit(s) written for apply_patch and for edit_file. */
function smallEdit() {
  const lines = Array.from({ length: 200 }, (_, index) => (index % 20 === 0 ? `def handler_${index}(request):` : `    step_${index} = request.field_${index}`));
  const file = `${lines.join('\n')}\n`;
  const edit = (at: number) => ({
    oldString: [lines[at - 1], lines[at], lines[at + 1]].join('\n'),
    newString: [lines[at - 1], `${lines[at]!.replace('request.', 'validated.')}  # checked`, lines[at + 1]].join('\n'),
    hunk: ['@@', ...[3, 2, 1].map((k) => ` ${lines[at - k]}`), `-${lines[at]}`, `+${lines[at]!.replace('request.', 'validated.')}  # checked`, ...[1, 2, 3].map((k) => ` ${lines[at + k]}`)],
  });
  const edits = [edit(45), edit(105), edit(165)];
  const patchOf = (count: number) => ['*** Begin Patch', '*** Update File: module.py', ...edits.slice(0, count).flatMap((one) => one.hunk), '*** End Patch'].join('\n');
  return { file, edits, patchOf };
}

/** Bytes of the Responses API items one call makes: the model's function_call and the output it reads. */
function itemBytes(callId: string, name: string, args: unknown, output: string): number {
  const call = { type: 'function_call', call_id: callId, name, arguments: JSON.stringify(args) };
  const result = { type: 'function_call_output', call_id: callId, output };
  return Buffer.byteLength(JSON.stringify(call)) + Buffer.byteLength(JSON.stringify(result));
}

async function callOk(turn: TurnDriver, id: string, name: string, args: unknown): Promise<string> {
  const result = await turn.call(id, name, args);
  if (result.error) throw new Error(`${name}: ${result.error.message}`);
  return textOf(result);
}

export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-files-'));
  const sidecar = await startSidecar({ args: ['--workspace', dir, '--state-dir', path.join(dir, 'state'), '--log-level', 'error'] });
  const rows: BenchRow[] = [];
  try {
    const turn = await openTurn(createClient(sidecar.address), 'bench-files');
    let id = 0;
    const big = bigFile();
    writeFileSync(path.join(dir, 'big.py'), big.original);
    // Interleaved rounds: the patch makes the new version, write_file puts the whole old one back,
    // so every call changes the file and both move the same 10,000 lines to disk.
    const patchTimes: number[] = [];
    const writeTimes: number[] = [];
    for (let round = -3; round < RUNS; round++) {
      let started = performance.now();
      await callOk(turn, `p${++id}`, 'apply_patch', { patch: big.forward });
      if (round >= 0) patchTimes.push(performance.now() - started);
      if (round === -3 && readFileSync(path.join(dir, 'big.py'), 'utf8') !== big.changed) throw new Error('the patched file is not what the patch should make');
      started = performance.now();
      await callOk(turn, `w${++id}`, 'write_file', { path: 'big.py', content: big.original });
      if (round >= 0) writeTimes.push(performance.now() - started);
    }
    const patchP50 = quantile(patchTimes, 0.5);
    const writeP50 = quantile(writeTimes, 0.5);
    rows.push({
      suite: 'files',
      name: `apply_patch: ${HUNKS} hunks into a ${LINES.toLocaleString('en-US')}-line file, p50`,
      value: patchP50,
      unit: 'ms',
      reference: 'write_file of the same file (same run)',
      ratio: patchP50 / writeP50,
      note: `write_file p50 ${writeP50.toFixed(1)} ms; ${(Buffer.byteLength(big.forward) / 1024).toFixed(0)} KiB of patch vs ${(Buffer.byteLength(big.changed) / 1024).toFixed(0)} KiB of content; ratio: patch time / write time`,
    });

    // One edit, then three edits of one file: the JSON the model sends and receives.
    const small = smallEdit();
    const measure = async (count: number) => {
      writeFileSync(path.join(dir, 'module.py'), small.file);
      const patchArgs = { patch: small.patchOf(count) };
      const patchBytes = itemBytes('call_1', 'apply_patch', patchArgs, await callOk(turn, `s${++id}`, 'apply_patch', patchArgs));
      const patched = readFileSync(path.join(dir, 'module.py'), 'utf8');
      writeFileSync(path.join(dir, 'module.py'), small.file);
      let editBytes = 0;
      for (const edit of small.edits.slice(0, count)) {
        const args = { path: 'module.py', old_string: edit.oldString, new_string: edit.newString };
        editBytes += itemBytes(`call_${id}`, 'edit_file', args, await callOk(turn, `e${++id}`, 'edit_file', args));
      }
      if (readFileSync(path.join(dir, 'module.py'), 'utf8') !== patched) throw new Error('apply_patch and edit_file made different files');
      return { patchBytes, editBytes };
    };
    const one = await measure(1);
    rows.push({ suite: 'files', name: 'one edit: JSON the model sends + receives, apply_patch', value: one.patchBytes, unit: 'bytes', reference: 'edit_file, same change', ratio: one.patchBytes / one.editBytes, note: `edit_file: ${one.editBytes} bytes; function_call + function_call_output items` });
    const three = await measure(3);
    rows.push({ suite: 'files', name: 'three edits of one file: 1 apply_patch call', value: three.patchBytes, unit: 'bytes', reference: '3 edit_file calls, same changes', ratio: three.patchBytes / three.editBytes, note: `edit_file: ${three.editBytes} bytes` });
    const definition = (name: string) => {
      const tool = turn.toolSet.tools.find((candidate) => candidate.name === name)!;
      return Buffer.byteLength(JSON.stringify({ type: 'function', name: tool.name, description: tool.description, parameters: JSON.parse(tool.parametersJson), strict: tool.strict }));
    };
    rows.push({ suite: 'files', name: 'tool definition the model receives each request: apply_patch', value: definition('apply_patch'), unit: 'bytes', reference: 'edit_file', ratio: definition('apply_patch') / definition('edit_file'), note: `edit_file: ${definition('edit_file')} bytes; the native { type: "apply_patch" } tool has no definition to send` });
    await turn.end();
  } finally {
    await sidecar.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
