// What a newcomer does with the package, end to end, as docs/package.md says it: pack it (`npm run
// pack`), run the page's "in your project" commands in an empty folder (npm init, type=module, the
// tarball and zod, then TypeScript and @types/node at whatever version the registry gives today),
// write the page's tsconfig.json and example files, compile with the page's `npx tsc`, run the three
// bins, host the module in a sidecar started by the bin and call its tool over gRPC with the
// package's own client, and embed a sidecar with startSidecar.
//
// The image's install (deploy/image/install.sh) stays offline: it gets a lock made from this
// repository's (.ci/consumer-lock.mjs), so it finds every tarball in the npm cache.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const page = () => readFileSync(join(root, 'docs/package.md'), 'utf8');

/** The npm commands of the page's "in your project" block, the tarball's path made this one. */
function projectCommands(tarball: string): string[] {
  const block = /```sh\n# in your project\n([\s\S]*?)```/.exec(page())?.[1];
  if (!block) throw new Error('docs/package.md has no "# in your project" sh block');
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line.startsWith('npm '))
    .map((line) => line.replace('/path/to/tools-runtime/.tmp/tools-runtime-0.1.0.tgz', tarball));
}

/** The page's `// tsconfig.json` block (JSON with a comment line, as tsc reads it). */
function pageTsconfig(): string {
  const block = /```jsonc\n\/\/ tsconfig\.json\n([\s\S]*?)```/.exec(page())?.[1];
  if (!block) throw new Error('docs/package.md has no tsconfig.json block');
  return block;
}

/** The code blocks of docs/package.md that start with `// src/NAME.ts`: the page's examples are what this test runs. */
function docsExamples(): Map<string, string> {
  const files = new Map<string, string>();
  for (const match of page().matchAll(/```ts\n\/\/ (src\/[\w-]+\.ts)\n([\s\S]*?)```/g)) files.set(match[1]!, match[2]!);
  return files;
}

/** Spawns `args` with plain node in `cwd`, waits for its `{"event":"listening"}` line. */
async function startListening(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<{ address: string; child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await once(child, 'exit');
  };
  try {
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${args.join(' ')}: no listening line in 60 s; stderr:\n${stderr}`)), 60_000);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (!line.includes('"listening"')) return;
        clearTimeout(timer);
        resolve((JSON.parse(line) as { address: string }).address);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${args.join(' ')} exited ${code}; stderr:\n${stderr}`));
      });
    });
    return { address, child, stop };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

describe('the packed package in an empty project', () => {
  let dir: string;
  let project: string;
  let tarball: string;
  const bin = (name: string) => join(project, 'node_modules/.bin', name);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'packed-package-'));
    project = join(dir, 'project');
    const packed = JSON.parse(execFileSync(process.execPath, [join(root, '.ci/pack.mjs'), '--out', dir], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as { tarball: string };
    tarball = packed.tarball;
    mkdirSync(project);
    // The page's commands, as a reader runs them (from the registry: TypeScript is whatever it gives today).
    for (const command of projectCommands(tarball)) {
      execFileSync('sh', ['-c', `${command} --no-audit --no-fund`.replace(/^npm (init|pkg)(.*) --no-audit --no-fund$/, 'npm $1$2')], { cwd: project, stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
    }
  }, 600_000);

  afterAll(() => {
    if (dir && !process.env.KEEP_PACKED_PACKAGE) rmSync(dir, { recursive: true, force: true });
  });

  it('installs no database driver, no OpenTelemetry exporter and no native addon', () => {
    const installed = readdirSync(join(project, 'node_modules')).flatMap((name) =>
      name.startsWith('@') ? readdirSync(join(project, 'node_modules', name)).map((scoped) => `${name}/${scoped}`) : [name],
    );
    expect(installed).toContain('tools-runtime');
    expect(installed).toContain('zod');
    for (const absent of ['better-sqlite3', 'pg', 'pg-boss', 'kysely', 'mcporter', 'openai', 'hono']) expect(installed).not.toContain(absent);
    expect(installed.filter((name) => name.startsWith('@opentelemetry/') && name !== '@opentelemetry/api')).toEqual([]);
    // (TypeScript 7's compiler is an executable of its own package, not a Node addon.)
    const native = execFileSync('find', [join(project, 'node_modules'), '-name', '*.node'], { encoding: 'utf8' }).trim();
    expect(native).toBe('');
  });

  it('type-checks and compiles a consumer module against the declaration files', () => {
    mkdirSync(join(project, 'src'));
    const examples = docsExamples();
    expect([...examples.keys()].sort()).toEqual(['src/call.ts', 'src/shout-tools.ts']);
    for (const [file, code] of examples) writeFileSync(join(project, file), code);
    // Declarations that lost their types (a module tsc cannot resolve becomes `any`) would let a
    // wrong use through: then a directive below is unused, which is an error of its own.
    writeFileSync(
      join(project, 'src/misuse.ts'),
      [
        "import type { ExecutionMode } from 'tools-runtime';",
        "import type { ToolCategory } from 'tools-runtime/sidecar';",
        "import type { TurnContextInput } from 'tools-runtime/controller';",
        '// @ts-expect-error: no such execution mode',
        "export const mode: ExecutionMode = 'sometimes';",
        '// @ts-expect-error: a name is a string',
        'export const category: ToolCategory = { name: 1, create: () => [] };',
        '// @ts-expect-error: turnId is required',
        "export const context: TurnContextInput = { agentId: 'a' };",
        '',
      ].join('\n'),
    );
    writeFileSync(join(project, 'tsconfig.json'), pageTsconfig());
    expect(page()).toContain('npx tsc ');
    const tsc = spawnSync('npx', ['tsc'], { cwd: project, encoding: 'utf8' });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
    // Where the page's --tools ./build/shout-tools.js looks.
    expect(existsSync(join(project, 'build/shout-tools.js'))).toBe(true);
    expect(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'))).toMatchObject({ type: 'module' });
    // tsc takes most of a minute per run on two shared cores.
  }, 300_000);

  it('runs the bins', () => {
    const sidecarHelp = spawnSync(bin('tools-runtime-sidecar'), ['--help'], { cwd: project, encoding: 'utf8' });
    expect(sidecarHelp.status).toBe(0);
    expect(sidecarHelp.stdout).toContain('--tools MODULE');
    const controllerHelp = spawnSync(bin('tools-runtime-controller'), ['--help'], { cwd: project, encoding: 'utf8' });
    expect(controllerHelp.status).toBe(0);
    expect(controllerHelp.stderr + controllerHelp.stdout).toContain('serve');
    // npm start's turn, from the installed package: a sidecar child, the embedded model, one turn.
    const turn = spawnSync(bin('tools-runtime'), [], { cwd: project, encoding: 'utf8', timeout: 120_000 });
    expect(turn.stderr).not.toMatch(/Error:/);
    expect(turn.status).toBe(0);
    // The page's turn: the embedded model calls the reader's own tool.
    expect(page()).toContain('npx tools-runtime --tools ./build/shout-tools.js --agent-id loud-1 --prompt "call shout with word=hello"');
    const own = spawnSync(bin('tools-runtime'), ['--tools', './build/shout-tools.js', '--agent-id', 'loud-1', '--prompt', 'call shout with word=hello'], {
      cwd: project,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, INIT_CWD: project },
    });
    expect(own.status, own.stderr).toBe(0);
    expect(own.stdout).toContain('I called shout with {"word":"hello"}. It returned:\nHELLO!');
  }, 300_000);

  it('hosts the consumer\'s own tool module in the bin\'s sidecar and calls it over gRPC', async () => {
    const workspace = join(dir, 'workspace');
    mkdirSync(workspace, { recursive: true });
    const child = spawn(bin('tools-runtime-sidecar'), ['--workspace', workspace, '--state-dir', join(dir, 'state'), '--tools', './build/shout-tools.js'], {
      cwd: project,
      // As npx sets it: the folder it ran in (vitest's own npm run would say the repository).
      env: { ...process.env, INIT_CWD: project },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    try {
      const address = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no listening line; stderr:\n${stderr}`)), 30_000);
        createInterface({ input: child.stdout }).on('line', (line) => {
          if (line.includes('"listening"')) {
            clearTimeout(timer);
            resolve((JSON.parse(line) as { address: string }).address);
          }
        });
        child.once('exit', (code) => reject(new Error(`sidecar exited ${code}; stderr:\n${stderr}`)));
      });
      const called = JSON.parse(execFileSync(process.execPath, ['build/call.js', address], { cwd: project, encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] })) as {
        tools: string[];
        result: { content: Array<{ text?: string }>; error?: unknown };
      };
      expect(called.tools).toContain('run_command');
      expect(called.tools.at(-1)).toBe('shout');
      expect(called.result.error).toBeUndefined();
      expect(called.result.content[0]?.text).toBe('HELLO!');
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
  });

  it('embeds a sidecar with startSidecar({ categories }) and the creator sees the turn\'s agent', () => {
    const embedded = JSON.parse(execFileSync(process.execPath, ['build/call.js'], { cwd: project, encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] })) as {
      loud: { tools: string[]; result: { content: Array<{ text?: string }> } };
      quiet: { tools: string[]; result: { error?: { code: string } } };
    };
    expect(embedded.loud.tools).toEqual(['shout']);
    expect(embedded.loud.result.content[0]?.text).toBe('HELLO!');
    expect(embedded.quiet.tools).toEqual([]);
    expect(embedded.quiet.result.error?.code).toBe('unknown_tool');
  });

  // The Dockerfile's install step, run here as the image's build would (offline, from the npm
  // cache): what is exercised is the install script, the folder it makes and both processes
  // started from it with plain node as the manifests start them. Not exercised: the Docker build
  // itself, the base image, bubblewrap inside the image, the non-root user.
  it('makes the image\'s folder with deploy/image/install.sh; a sidecar and a controller start there with plain node and answer health checks', async () => {
    const image = join(dir, 'image');
    execFileSync('sh', [join(root, 'deploy/image/install.sh'), '--tarball', tarball, '--dest', image, '--offline'], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 900_000 });
    expect(readdirSync(image).sort()).toEqual(['deploy', 'dist', 'node_modules', 'package-lock.json', 'package.json']);
    const token = join(dir, 'token');
    writeFileSync(token, 'image-test-token\n');
    const workspace = join(dir, 'image-workspace');
    mkdirSync(workspace, { recursive: true });
    const probe = (address: string, service: string) =>
      spawnSync(process.execPath, ['deploy/grpc-health-probe.mjs', '--address', address, '--token-file', token, '--service', service], { cwd: image, encoding: 'utf8', timeout: 30_000 });

    // As deploy/agent.yaml and deploy/controller.yaml start them (on loopback here).
    const sidecar = await startListening(['dist/sidecar/main.js', '--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(dir, 'image-state'), '--token-file', token], image);
    try {
      const sidecarHealth = probe(sidecar.address, 'toolruntime.v1.ToolSidecarService');
      expect(sidecarHealth.stderr).toBe('');
      expect(sidecarHealth.status).toBe(0);
      const agents = join(dir, 'agents.json');
      writeFileSync(agents, JSON.stringify({ 'agent-1': { address: sidecar.address, tokenFile: token } }));
      // SQLite (better-sqlite3, installed by the script) is serve's store without DATABASE_URL.
      const env = { ...process.env };
      delete env.DATABASE_URL;
      const controller = await startListening(['dist/controller/control-plane-main.js', 'serve', '--listen', '127.0.0.1:0', '--agents', agents, '--data-dir', join(dir, 'image-data'), '--token-file', token], image, env);
      try {
        const controllerHealth = probe(controller.address, 'toolruntime.v1.ControlPlaneService');
        expect(controllerHealth.stderr).toBe('');
        expect(controllerHealth.status).toBe(0);
      } finally {
        await controller.stop();
      }
    } finally {
      await sidecar.stop();
    }
  }, 900_000);
});
