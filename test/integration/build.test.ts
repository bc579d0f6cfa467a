// What production runs: `npm run build` output, started with plain node. The built sidecar serves a
// turn and loads what a turn may never need only on first use; the built controller runs a whole
// turn and spawns the built sidecar with node itself, never tsx.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSidecarClient } from '../../controller/sidecar-client/create-sidecar-client.js';
import { startSidecar, type StartedSidecar } from '../fixtures/start-sidecar.js';
import { localTokenOptions } from './sidecar/turn-driver.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const probe = join(root, 'test/fixtures/process-probe.mjs');
const lazyPackages = ['ajv', 'yaml', 'turndown', '@grpc/reflection', '@grpc/proto-loader', 'protobufjs'];

interface ProbedProcess {
  pid: number;
  script: string;
  execArgv: string[];
}

const probeEnv = (dir: string): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, PROCESS_PROBE_DIR: dir, NODE_OPTIONS: `--import=${probe}` };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  return env;
};
const processes = (dir: string): ProbedProcess[] =>
  existsSync(join(dir, 'processes.jsonl'))
    ? readFileSync(join(dir, 'processes.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as ProbedProcess)
    : [];

/** Asks a probed process which packages it loaded, and waits (bounded) for its answer. */
async function loadedPackages(dir: string, pid: number): Promise<string[]> {
  const file = join(dir, `packages-${pid}.json`);
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  for (let waited = 0; waited < 10_000; waited += 50) {
    if (existsSync(file)) {
      try {
        return JSON.parse(readFileSync(file, 'utf8')) as string[];
      } catch {
        // written right now: read again
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`process ${pid} did not report its packages within 10 s`);
}

beforeAll(() => {
  execFileSync(process.execPath, [join(root, '.ci/build.mjs'), '--if-stale'], { cwd: root, stdio: 'pipe', timeout: 180_000 });
}, 200_000);

describe('the built sidecar', () => {
  let scratch: string;
  let sidecar: StartedSidecar;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'built-sidecar-'));
    sidecar = await startSidecar({
      entry: 'dist/sidecar/main.js',
      runtime: 'node',
      args: ['--listen', '127.0.0.1:0', '--workspace', root, '--state-dir', join(scratch, 'state'), '--log-level', 'warn'],
      env: probeEnv(scratch),
    });
  });

  afterAll(async () => {
    await sidecar?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('runs from dist/ with plain node and serves a turn', async () => {
    const [started] = processes(scratch);
    expect(started!.script).toBe(join(root, 'dist/sidecar/main.js'));
    expect(started!.execArgv.join(' ')).not.toContain('tsx');

    const client = createSidecarClient({ address: sidecar.address });
    try {
      const turn = await client.openTurn({ agentId: 'build-test', turnId: 'b1' }, { signal: AbortSignal.timeout(20_000) });
      expect(turn.tools.map((tool) => tool.name)).toContain('read_file');
      const result = await turn.call({ callId: 'c1', name: 'read_file', argumentsJson: '{"path": "package.json", "end_line": 3}' }).result;
      expect(result.error).toBeUndefined();
      expect(JSON.stringify(result.content)).toContain('tools-runtime');
      // zod runs in the bundle (English messages only: the build drops its other locales).
      const invalid = await turn.call({ callId: 'c2', name: 'read_file', argumentsJson: '{"path": 5}' }).result;
      expect(invalid.error?.code).toBe('invalid_arguments');
      expect(JSON.stringify(invalid.content)).toMatch(/path: expected string, got number/);
      await turn.close();
    } finally {
      client.close();
    }
  });

  it('loads ajv, yaml and turndown only on first use, and answers reflection without a .proto parser', async () => {
    const before = await loadedPackages(scratch, sidecar.child.pid!);
    expect(before.filter((name) => lazyPackages.includes(name))).toEqual([]);

    // One reflection request: answered from the generated descriptors, still without a .proto parser.
    const reflection = new grpc.Client(sidecar.address, grpc.credentials.createInsecure(), localTokenOptions(sidecar.address));
    const passThrough = (buffer: Buffer) => buffer;
    const call = reflection.makeBidiStreamRequest('/grpc.reflection.v1.ServerReflection/ServerReflectionInfo', passThrough, passThrough);
    const answer = new Promise<Buffer>((resolve, reject) => {
      call.once('data', resolve);
      call.once('error', reject);
    });
    // ServerReflectionRequest { list_services (7): "" }
    call.write(Buffer.from([0x3a, 0x00]));
    const response = await answer;
    call.end();
    reflection.close();
    expect(response.toString('latin1')).toContain('toolruntime.v1.ToolSidecarService');
    const after = await loadedPackages(scratch, sidecar.child.pid!);
    expect(after.filter((name) => lazyPackages.includes(name))).toEqual([]);
  });
});

describe("the built sidecar's start-up path", () => {
  // The build's metafile (.ci/build.mjs writes it) says which inputs each output holds and what it
  // imports: the outputs dist/sidecar/main.js reaches by static imports are what loads before it listens.
  it('holds neither zod, the turn layer, the sandbox, MCP nor the reflection messages', () => {
    const meta = JSON.parse(readFileSync(join(root, '.tmp/build-metafile.json'), 'utf8')) as {
      outputs: Record<string, { inputs: Record<string, unknown>; imports: { path: string; kind: string; external?: boolean }[] }>;
    };
    const reached = new Set<string>();
    const pending = ['dist/sidecar/main.js'];
    while (pending.length > 0) {
      const output = pending.pop()!;
      if (reached.has(output)) continue;
      reached.add(output);
      for (const imported of meta.outputs[output]!.imports) if (imported.kind === 'import-statement' && !imported.external) pending.push(imported.path);
    }
    const inputs = [...reached].flatMap((output) => Object.keys(meta.outputs[output]!.inputs));
    // What must be there, so that the check below looks at the real path.
    expect(inputs).toEqual(expect.arrayContaining(['sidecar/cli.ts', 'sidecar/grpc/turn-handler.ts', 'node_modules/@grpc/grpc-js/build/src/server.js']));
    const late = [/^node_modules\/zod\//, /^sidecar\/grpc\/open-turn\.ts$/, /^sidecar\/turn\/turn-session\.ts$/, /^sidecar\/tool-sets\.ts$/, /^sidecar\/categories\/computer\/sandbox\/(bwrap-argv|sandbox-probe|network-proxy)\.ts$/, /@modelcontextprotocol/, /^src\/gen\/grpc\/reflection\//];
    expect(inputs.filter((input) => late.some((pattern) => pattern.test(input)))).toEqual([]);
  });
});

describe('the built controller', () => {
  it('runs a whole turn with plain node and spawns the built sidecar with node, not tsx', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'built-controller-'));
    try {
      const child = spawn(process.execPath, [join(root, 'dist/controller/main.js'), '--prompt', 'What is in here?'], {
        cwd: root,
        env: probeEnv(scratch),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
      const [code] = (await once(child, 'exit')) as [number | null];
      clearTimeout(timer);
      expect(code, stderr).toBe(0);
      expect(stdout).toContain('You asked: "What is in here?"');
      expect(stderr).toContain('turn finished: completed');

      const started = processes(scratch);
      expect(started.map((entry) => entry.script)).toEqual([join(root, 'dist/controller/main.js'), join(root, 'dist/sidecar/main.js')]);
      for (const entry of started) expect(entry.execArgv.join(' ')).not.toContain('tsx');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 120_000);
});
