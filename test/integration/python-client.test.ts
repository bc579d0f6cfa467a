// A client in another language needs the .proto and nothing else: Python stubs are generated here
// from proto/ by Debian's protoc and grpc_python_plugin, and a Python script drives a real sidecar.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSidecar, type StartedSidecar } from '../fixtures/start-sidecar.js';
import { requireSystemTools } from '../fixtures/system-tools.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const python = '/usr/bin/python3';

interface PythonSummary {
  assembled: string[];
  execution_modes: Record<string, string>;
  tool_set: string[];
  events: Array<{
    call_id: string;
    event: string;
    label?: string;
    kind?: string;
    payload?: unknown;
    text?: string;
    error_code?: string;
    repairs?: string[];
    completed_label?: string;
  }>;
}

const needs = requireSystemTools({
  suite: 'the Python client test (test/integration/python-client.test.ts)',
  tools: [
    { name: 'protoc', executable: '/usr/bin/protoc' },
    { name: 'grpc_python_plugin', executable: '/usr/bin/grpc_python_plugin' },
    { name: "Python's grpc and protobuf modules", command: [python, '-c', 'import grpc, google.protobuf'] },
  ],
  aptPackages: ['protobuf-compiler', 'protobuf-compiler-grpc', 'python3-grpcio', 'python3-protobuf'],
});

describe('a Python client built from the proto alone', needs, () => {
  let scratch: string;
  let sidecar: StartedSidecar;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'python-client-'));
    execFileSync('/usr/bin/protoc', [
      `--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin`,
      `-I${join(root, 'proto')}`,
      `--python_out=${scratch}`,
      `--grpc_out=${scratch}`,
      join(root, 'proto/toolruntime/v1/sidecar.proto'),
      join(root, 'proto/toolruntime/v1/control_plane.proto'),
    ]);
    const workspace = mkdtempSync(join(tmpdir(), 'python-client-ws-'));
    const stateDir = mkdtempSync(join(tmpdir(), 'python-client-state-'));
    sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', stateDir] });
  });

  afterAll(async () => {
    await sidecar?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('assembles tools, repairs fenced arguments, and gets exactly one result per call', () => {
    const output = execFileSync(python, [join(root, 'test/fixtures/python/turn_client.py'), scratch, sidecar.address, sidecar.token ?? ''], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    const summary = JSON.parse(output) as PythonSummary;

    expect(summary.assembled).toContain('todo_write');
    expect(summary.tool_set).toEqual(summary.assembled);
    expect(summary.execution_modes.todo_write).toBe('EXECUTION_MODE_SEQUENTIAL');

    const results = summary.events.filter((e) => e.event === 'result');
    expect(results.map((r) => r.call_id).sort()).toEqual(['py-call-1', 'py-call-2', 'py-call-3']);

    const write = results.find((r) => r.call_id === 'py-call-1')!;
    expect(write.error_code).toBe('');
    expect(write.repairs).toContain('extract_code_fence');
    const update = summary.events.find((e) => e.call_id === 'py-call-1' && e.event === 'presentation');
    expect(update?.kind).toBe('todo.updated');

    // todo_read is parallel but must wait for the sequential todo_write received before it.
    const read = results.find((r) => r.call_id === 'py-call-2')!;
    expect(read.error_code).toBe('');
    expect(read.text).toContain('from python');

    const unknown = results.find((r) => r.call_id === 'py-call-3')!;
    expect(unknown.error_code).toBe('unknown_tool');
    expect(unknown.text).toContain('no_such_tool');
  });
});
