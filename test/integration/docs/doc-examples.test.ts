// The README's and docs/' shell examples that talk to a server run here, against a real sidecar and
// a real `controller serve`, so a doc cannot drift from the code. A block fenced `sh exec sidecar`
// gets $SIDECAR (the sidecar's address) and $SIDECAR_TOKEN_FILE, `sh exec controller` gets $CONTROLLER (serve's address,
// serving agent-a on that sidecar); plain `sh exec` needs no server. Each runs with bash -e -o
// pipefail from the repository root and must exit 0; a `grep -q` in a block checks what it printed.
import { existsSync, readdirSync, readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedAgentModel, type ScriptedAgentModel } from '../../fakes/scripted-agent-model.js';
import { runToExit } from '../../fixtures/run-to-exit.js';
import { startServe } from '../../fixtures/start-serve.js';
import { controlTokenPath } from '../../../controller/control-plane/grpc/control-token.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

interface Block {
  file: string;
  line: number;
  info: string;
  code: string;
}

/** Every fenced block of a markdown file, with the line its fence opens on. */
function fencedBlocks(file: string): Block[] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = /^```(.*)$/.exec(lines[index]!);
    if (!open) continue;
    const start = index;
    const body: string[] = [];
    while (++index < lines.length && !lines[index]!.startsWith('```')) body.push(lines[index]!);
    blocks.push({ file, line: start + 1, info: open[1]!.trim(), code: body.join('\n') });
  }
  return blocks;
}

const docs = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
const blocks = docs.flatMap(fencedBlocks);
const executed = blocks.filter((block) => /^sh exec\b/.test(block.info));
const contextOf = (block: Block) => block.info.split(/\s+/)[2] ?? 'none';

describe('the docs\' shell examples', () => {
  it('mark every example that calls a server through buf curl or grpcurl as executed', () => {
    const unmarked = blocks.filter((block) => /^(sh|bash|shell|console)\b/.test(block.info) && !/^sh exec\b/.test(block.info) && /\b(buf curl|grpcurl)\b/.test(block.code));
    expect(unmarked.map((block) => `${block.file}:${block.line}`)).toEqual([]);
    expect(executed.filter((block) => !['none', 'sidecar', 'controller'].includes(contextOf(block))).map((block) => `${block.file}:${block.line} ${block.info}`)).toEqual([]);
    // The README's and the integration guide's examples are among them.
    expect(executed.filter((block) => block.file === 'README.md').length).toBeGreaterThanOrEqual(2);
    expect(executed.filter((block) => block.file === 'docs/integrating.md' && contextOf(block) === 'sidecar').length).toBeGreaterThanOrEqual(3);
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, '').replace(/ /g, '-');

describe('the docs\' links', () => {
  it('stay inside the repository and reach an existing file and heading', () => {
    const problems: string[] = [];
    const headings = new Map<string, Set<string>>();
    const headingsOf = (file: string) => {
      let found = headings.get(file);
      if (!found) {
        const text = readFileSync(join(root, file), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
        found = new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1]!)));
        headings.set(file, found);
      }
      return found;
    };
    for (const file of docs) {
      const text = readFileSync(join(root, file), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
      if (/<https?:\/\/|\]\(https?:/.test(text)) problems.push(`${file}: links outside the repository`);
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const resolved = path === '' ? file : join(dirname(file), path);
        if (!existsSync(join(root, resolved))) {
          problems.push(`${file}: ${target} (no such file)`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md') && !headingsOf(resolved).has(anchor)) problems.push(`${file}: ${target} (no such heading)`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe('the docs\' executed examples', () => {
  const dir = mkdtempSync(join(tmpdir(), 'doc-examples-'));
  let sidecar: StartedSidecar;
  let serve: StartedSidecar;
  let model: ScriptedAgentModel;
  beforeAll(async () => {
    sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', dir, '--state-dir', join(dir, 'state')] });
    model = await startScriptedAgentModel();
    const agents = join(dir, 'agents.json');
    writeFileSync(agents, JSON.stringify({ 'agent-a': { address: sidecar.address } }));
    serve = await startServe({
      args: ['--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data'), '--agents', agents, '--base-url', model.baseURL, '--approve', 'never'],
      env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '', DATABASE_URL: '' },
    });
  }, 120_000);
  afterAll(async () => {
    await serve?.stop('SIGKILL');
    await sidecar?.stop();
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  for (const block of executed) {
    it(`${block.file}:${block.line} (${contextOf(block)})`, async () => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        SIDECAR: sidecar.address,
        // The token the sidecar generated (it names this file in its listening line).
        SIDECAR_TOKEN_FILE: sidecar.tokenFile ?? '',
        CONTROLLER: serve.address,
        // The token serve generated (it names this file in its listening line).
        CONTROLLER_TOKEN_FILE: controlTokenPath({ dataDir: join(dir, 'data'), kind: 'control-plane', address: serve.address }),
        PATH: `${root}node_modules/.bin:${process.env.PATH ?? ''}` };
      for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'DATABASE_URL', 'INIT_CWD']) delete env[name];
      const result = await runToExit('bash', ['-e', '-o', 'pipefail', '-c', block.code], { cwd: root, env, timeoutMs: 120_000 });
      expect(result.code, `${block.file}:${block.line} exited ${result.code}\n--- block\n${block.code}\n--- stdout\n${result.stdout.slice(-2_000)}\n--- stderr\n${result.stderr.slice(-2_000)}`).toBe(0);
    }, 150_000);
  }
});
