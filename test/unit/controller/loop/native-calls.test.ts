import { describe, expect, it } from 'vitest';
import { truncateMiddle } from '../../../../src/index.js';
import { callsOfResponse, createStreamCollector, outputItemsOf, patchTextOf } from '../../../../controller/loop/native-calls.js';
import { nativeToolsFor, planNativeTools } from '../../../../controller/loop/native-tools.js';
import type { ResponseItem } from '../../../../controller/model/responses-model.js';
import type { CallResult, ToolDefinition } from '../../../../controller/sidecar-client/sidecar-types.js';

const tool = (name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name,
  description: name,
  parameters: { type: 'object' },
  parametersJson: '{"type":"object"}',
  strict: false,
  deferLoading: false,
  executionMode: 'sequential',
  readOnly: false,
  destructive: true,
  ...extra,
});
const tools = [tool('read_file'), tool('apply_patch', { nativeTool: 'apply_patch' }), tool('run_command', { nativeTool: 'shell' })];
const ok = (callId: string, text: string, details?: unknown): CallResult => ({ callId, content: [{ type: 'text', text }], completedLabel: '', terminateTurn: false, repairs: [], durationMs: 1, ...(details ? { details } : {}) });

describe('patchTextOf', () => {
  it('wraps each operation in the V4A envelope the apply_patch tool takes', () => {
    expect(patchTextOf({ type: 'create_file', path: 'a.txt', diff: '+one\n+two\n' })).toBe('*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch');
    // A create diff given as plain lines is prefixed.
    expect(patchTextOf({ type: 'create_file', path: 'b.txt', diff: 'one\ntwo' })).toBe('*** Begin Patch\n*** Add File: b.txt\n+one\n+two\n*** End Patch');
    expect(patchTextOf({ type: 'update_file', path: 'c.ts', diff: '@@ fn\n-a\n+b\n' })).toBe('*** Begin Patch\n*** Update File: c.ts\n@@ fn\n-a\n+b\n*** End Patch');
    expect(patchTextOf({ type: 'delete_file', path: 'd' })).toBe('*** Begin Patch\n*** Delete File: d\n*** End Patch');
  });

  it('refuses an operation it does not know, or one without a path', () => {
    expect(() => patchTextOf({ type: 'rename_file', path: 'x' })).toThrow(/unknown apply_patch operation "rename_file"/);
    expect(() => patchTextOf({ type: 'delete_file' })).toThrow(/path/);
  });
});

describe('planNativeTools and nativeToolsFor', () => {
  it('replaces exactly the tools that declare a provider tool, and only when enabled', () => {
    const plan = planNativeTools(tools, true);
    expect(plan.providerTools).toEqual([{ type: 'apply_patch' }, { type: 'shell', environment: { type: 'local' } }]);
    expect([...plan.replaced].map((t) => t.name)).toEqual(['apply_patch', 'run_command']);
    expect(planNativeTools(tools, false).providerTools).toEqual([]);
    // A namespaced tool is never replaced: the provider's tool has no namespace.
    expect(planNativeTools([tool('run_command', { nativeTool: 'shell', namespace: 'ns' })], true).providerTools).toEqual([]);
  });

  it('auto offers them to GPT-5.1+ and Codex models at OpenAI only', () => {
    expect(nativeToolsFor('auto', { name: 'gpt-5.4' })).toBe(true);
    expect(nativeToolsFor('auto', { name: 'gpt-5.1-codex', baseURL: 'https://api.openai.com/v1' })).toBe(true);
    expect(nativeToolsFor('auto', { name: 'gpt-5' })).toBe(false);
    expect(nativeToolsFor('auto', { name: 'gpt-4.1' })).toBe(false);
    expect(nativeToolsFor('auto', { name: 'gpt-5.4', baseURL: 'http://127.0.0.1:8000/v1' })).toBe(false);
    expect(nativeToolsFor('on', { name: 'llama', baseURL: 'http://127.0.0.1:8000/v1' })).toBe(true);
    expect(nativeToolsFor('off', { name: 'gpt-5.4' })).toBe(false);
  });
});

describe('callsOfResponse and outputItemsOf', () => {
  const plan = planNativeTools(tools, true);

  it('turns native items into sidecar calls in output order and answers each item once, in order', () => {
    const output: ResponseItem[] = [
      { type: 'shell_call', call_id: 's1', action: { commands: ['a', 'b'], timeout_ms: 5000, max_output_length: 3 }, status: 'completed' },
      { type: 'function_call', call_id: 'f1', name: 'read_file', arguments: '{}' },
      { type: 'apply_patch_call', call_id: 'p1', operation: { type: 'delete_file', path: 'x' }, status: 'completed' },
    ];
    const calls = callsOfResponse({ id: 'r', output }, plan);
    expect(calls.map(({ call }) => [call.call_id, call.name, call.arguments])).toEqual([
      ['s1#1', 'run_command', '{"command":"a","timeout_ms":5000}'],
      ['s1#2', 'run_command', '{"command":"b","timeout_ms":5000}'],
      ['f1', 'read_file', '{}'],
      ['p1', 'apply_patch', JSON.stringify({ patch: '*** Begin Patch\n*** Delete File: x\n*** End Patch' })],
    ]);
    const streams = createStreamCollector();
    streams.add('s1#1', { stream: 'stdout', text: 'hello' });
    streams.add('s1#1', { stream: 'stderr', text: 'warn' });
    const items = outputItemsOf(
      calls,
      [
        ok('s1#1', 'exit code 0\nhellowarn', { exitCode: 0, signal: null, timedOut: false }),
        ok('s1#2', 'killed by signal SIGKILL\n(no output)', { exitCode: null, signal: 'SIGKILL', timedOut: false }),
        ok('f1', 'file text'),
        { ...ok('p1', 'no such file: x'), error: { code: 'tool_failed', message: 'no such file: x' } },
      ],
      streams.get,
    );
    expect(items).toEqual([
      {
        type: 'shell_call_output',
        call_id: 's1',
        max_output_length: 3,
        status: 'completed',
        output: [
          { stdout: truncateMiddle('hello', 3).text, stderr: truncateMiddle('warn', 3).text, outcome: { type: 'exit', exit_code: 0 } },
          { stdout: '', stderr: '', outcome: { type: 'exit', exit_code: 137 } },
        ],
      },
      { type: 'function_call_output', call_id: 'f1', output: 'file text' },
      { type: 'apply_patch_call_output', call_id: 'p1', status: 'failed', output: 'no such file: x' },
    ]);
    // max_output_length (3) cut each stream.
    expect(truncateMiddle('hello', 3).text).not.toBe('hello');
  });

  it('refuses a native call whose tool the turn lacks, and marks a cut-off one incomplete', () => {
    const refused = callsOfResponse({ id: 'r', output: [{ type: 'apply_patch_call', call_id: 'p', operation: { type: 'delete_file', path: 'x' }, status: 'completed' }] }, planNativeTools([], true));
    expect(refused[0]!.refused?.error?.message).toMatch(/apply_patch is not offered/);
    const cut = callsOfResponse({ id: 'r', status: 'incomplete', output: [{ type: 'shell_call', call_id: 's', action: { commands: ['x'] }, status: 'in_progress' }] }, plan);
    expect(cut[0]!.call.status).toBe('incomplete');
  });

  it('takes stdout from the result once the live budget ran out, and reports a timeout', () => {
    const calls = callsOfResponse({ id: 'r', output: [{ type: 'shell_call', call_id: 's', action: { commands: ['x'] }, status: 'completed' }] }, plan);
    const streams = createStreamCollector();
    streams.add('s', { stream: 'stdout', text: 'head\n[… live output stops here; the result keeps head and tail …]\n' });
    const [item] = outputItemsOf(calls, [ok('s', 'timed out after 5 ms\nhead … tail', { exitCode: null, signal: 'SIGTERM', timedOut: true })], streams.get);
    expect(item!.output).toEqual([{ stdout: 'head … tail', stderr: '', outcome: { type: 'timeout' } }]);
  });
});
