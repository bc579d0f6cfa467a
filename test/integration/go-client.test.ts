// A client in another language needs the .proto and nothing else: Go code is generated here from
// proto/ by Debian's protoc with protoc-gen-go and protoc-gen-go-grpc, built offline (GOPATH mode,
// no module proxy) against Debian's Go gRPC packages, and drives a real sidecar with a bearer token.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSidecar, type StartedSidecar } from '../fixtures/start-sidecar.js';
import { requireSystemTools } from '../fixtures/system-tools.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const gocode = '/usr/share/gocode';

interface GoSummary {
  without_token: string;
  assembled: string[];
  execution_modes: Record<string, string>;
  max_calls_in_flight: number;
  tool_set: string[];
  events: Array<{ call_id: string; event: string; label?: string; kind?: string; text?: string; error_code: string; repairs?: string[] }>;
}

const needs = requireSystemTools({
  suite: 'the Go client test (test/integration/go-client.test.ts)',
  tools: [
    { name: 'protoc', executable: '/usr/bin/protoc' },
    { name: 'protoc-gen-go', executable: '/usr/bin/protoc-gen-go' },
    { name: 'protoc-gen-go-grpc', executable: '/usr/bin/protoc-gen-go-grpc' },
    { name: 'go', executable: '/usr/bin/go' },
    { name: "Debian's Go gRPC", file: `${gocode}/src/google.golang.org/grpc/server.go` },
    // grpc-go's codec goes through github.com/golang/protobuf: 1.5 (over APIv2) reads protoc-gen-go's code, 1.3 cannot.
    { name: "Debian's github.com/golang/protobuf 1.5", file: `${gocode}/src/github.com/golang/protobuf/proto/registry.go` },
  ],
  aptPackages: ['protobuf-compiler', 'golang-go', 'protoc-gen-go', 'protoc-gen-go-grpc', 'golang-google-grpc-dev', 'golang-github-golang-protobuf-1-5-dev'],
});

describe('a Go client built from the proto alone', needs, () => {
  let scratch: string;
  let sidecar: StartedSidecar;
  let tokenFile: string;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'go-client-'));
    const gopath = join(scratch, 'gopath');
    mkdirSync(join(gopath, 'src', 'turnclient'), { recursive: true });
    copyFileSync(join(root, 'test/fixtures/go/turn_client.go'), join(gopath, 'src', 'turnclient', 'main.go'));
    // The proto's own go_package (toolruntime/v1;toolruntimev1) places the code: no M options.
    execFileSync('/usr/bin/protoc', [
      `-I${join(root, 'proto')}`,
      `--go_out=paths=source_relative:${join(gopath, 'src')}`,
      `--go-grpc_out=paths=source_relative:${join(gopath, 'src')}`,
      join(root, 'proto/toolruntime/v1/sidecar.proto'),
      join(root, 'proto/toolruntime/v1/control_plane.proto'),
    ]);
    execFileSync('/usr/bin/go', ['build', '-o', join(scratch, 'turn_client'), 'turnclient'], {
      cwd: gopath,
      env: { ...process.env, GO111MODULE: 'off', GOPATH: `${gopath}:${gocode}`, GOPROXY: 'off', GOFLAGS: '', GOTOOLCHAIN: 'local' },
      timeout: 240_000,
    });
    const workspace = join(scratch, 'workspace');
    mkdirSync(workspace);
    tokenFile = join(scratch, 'token');
    writeFileSync(tokenFile, 'go-client-token-7c1d\n');
    sidecar = await startSidecar({
      args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(scratch, 'state'), '--token-file', tokenFile],
    });
  }, 300_000);

  afterAll(async () => {
    await sidecar?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('is refused without the token, assembles tools and runs a turn with it', () => {
    const output = execFileSync(join(scratch, 'turn_client'), [sidecar.address, tokenFile], { encoding: 'utf8', timeout: 60_000 });
    const summary = JSON.parse(output) as GoSummary;

    expect(summary.without_token).toBe('Unauthenticated');
    expect(summary.assembled).toContain('todo_write');
    expect(summary.tool_set).toEqual(summary.assembled);
    expect(summary.execution_modes.todo_read).toBe('EXECUTION_MODE_PARALLEL');
    expect(summary.max_calls_in_flight).toBeGreaterThan(0);

    const results = summary.events.filter((e) => e.event === 'result');
    expect(results.map((r) => r.call_id).sort()).toEqual(['go-call-1', 'go-call-2', 'go-call-3']);
    const write = results.find((r) => r.call_id === 'go-call-1')!;
    expect(write.error_code).toBe('');
    expect(write.repairs).toContain('jsonrepair');
    // todo_read is parallel but waits for the sequential todo_write sent before it.
    expect(results.find((r) => r.call_id === 'go-call-2')!.text).toContain('from go');
    const invalid = results.find((r) => r.call_id === 'go-call-3')!;
    expect(invalid.error_code).toBe('invalid_arguments');
    expect(invalid.text).toContain('todos');
  });
});
