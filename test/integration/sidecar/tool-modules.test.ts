// Users' own tool categories in the built sidecar (`--tools MODULE`): the example module of
// examples/, a module outside the repository found as a package name, and modules that fail.
// Real child processes of dist/sidecar/main.js, real gRPC through the controller's client.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { bwrapWorks, testSandboxArgs } from '../../fixtures/test-sandbox.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const text = (result: { content: Array<{ type: string; text?: string }> }) => result.content.map((part) => part.text ?? '').join('');

describe('--tools: users\' categories in the built sidecar', () => {
  let dir: string;
  let workspace: string;
  let sidecar: StartedSidecar;
  let client: SidecarClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tool-modules-'));
    workspace = join(dir, 'workspace');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'poem.txt'), 'one two three\nfour five\n');
    // A package outside the repository, found by name in node_modules from the working directory.
    // It imports tools-runtime as an installed package would (a link to this checkout).
    mkdirSync(join(dir, 'node_modules/my-broken-tools'), { recursive: true });
    symlinkSync(root, join(dir, 'node_modules/tools-runtime'));
    // zod is the package's peer: the consumer has its own.
    symlinkSync(join(root, 'node_modules/zod'), join(dir, 'node_modules/zod'));
    writeFileSync(join(dir, 'node_modules/my-broken-tools/package.json'), JSON.stringify({ name: 'my-broken-tools', type: 'module', exports: { '.': { import: './index.js' } } }));
    writeFileSync(
      join(dir, 'node_modules/my-broken-tools/index.js'),
      `import { defineWorkerTool, textResult } from 'tools-runtime';
       import { z } from 'zod';
       const clash = defineWorkerTool({ name: 'run_command', description: 'takes a built-in name', schema: z.object({}), execute: async () => textResult('no') });
       export default [
         { name: 'thrower', create() { throw new Error('the thrower category cannot start'); } },
         { name: 'clasher', create: () => [clash] },
       ];`,
    );
    sidecar = await startSidecar({
      runtime: 'node',
      entry: 'dist/sidecar/main.js',
      // Paths resolve against INIT_CWD (where npm ran), package names are looked up from there.
      env: { INIT_CWD: dir },
      // The default sandbox where bubblewrap works, off where it does not (test-sandbox.ts).
      args: ['--workspace', workspace, '--state-dir', join(dir, 'state'), ...testSandboxArgs(), '--tools', `${root}examples/word-tools.js`, '--tools', 'my-broken-tools'],
    });
    client = createSidecarClient({ address: sidecar.address });
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await sidecar?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('offers the module\'s tools after every built-in one; a throwing or clashing category costs itself only', async () => {
    const turn = await client.openTurn({ agentId: 'a', turnId: 't1' });
    const names = turn.tools.map((tool) => tool.name);
    expect(names).toContain('run_command');
    expect(names.slice(-3)).toEqual(['count_words', 'count_lines', 'append_note']);
    expect(names.filter((name) => name === 'run_command')).toHaveLength(1);
    const result = await turn.call({ callId: 'c1', name: 'count_words', argumentsJson: '{"path":"poem.txt"}' }).result;
    expect(result.error).toBeUndefined();
    expect(text(result)).toBe('poem.txt has 5 words.');
    await turn.close();
    const logs = sidecar.stderr();
    expect(logs).toMatch(/"category":"thrower","module":"my-broken-tools","error":"the thrower category cannot start"/);
    expect(logs).toMatch(/"category":"clasher","module":"my-broken-tools","error":"its tool \\"run_command\\" has the name of a tool an earlier category offers"/);
  });

  it('gives users\' tools the built-ins\' guarantees: validation, presentation events, approvals by isDestructive', async () => {
    const asked: string[] = [];
    let answer = false;
    const turn = await client.openTurn(
      { agentId: 'a', turnId: 't2', approvalPolicy: { mode: 'destructive' } },
      {
        approve: async (request) => {
          asked.push(request.approval.toolName);
          return answer ? { approved: true } : { approved: false, reason: 'not now' };
        },
      },
    );
    const invalid = await turn.call({ callId: 'bad', name: 'count_words', argumentsJson: '{"path":5}' }).result;
    expect(invalid.error?.code).toBe('invalid_arguments');

    const events: string[] = [];
    for await (const event of turn.call({ callId: 'ev', name: 'count_words', argumentsJson: '```json\n{"path":"poem.txt"}\n```' })) {
      events.push(event.type === 'presentation' ? `presentation:${event.kind}` : event.type);
      if (event.type === 'result') expect(event.result.repairs.length).toBeGreaterThan(0);
    }
    expect(events).toEqual(['activity-started', 'presentation:words.counted', 'result']);

    const denied = await turn.call({ callId: 'd', name: 'append_note', argumentsJson: '{"line":"hello"}' }).result;
    expect(denied.error?.code).toBe('denied');
    expect(() => readFileSync(join(workspace, 'NOTES.md'))).toThrow();
    answer = true;
    const approved = await turn.call({ callId: 'ok', name: 'append_note', argumentsJson: '{"line":"hello"}' }).result;
    expect(approved.error).toBeUndefined();
    expect(readFileSync(join(workspace, 'NOTES.md'), 'utf8')).toBe('hello\n');
    // Only the destructive tool asked; count_words is read-only.
    expect(asked).toEqual(['append_note', 'append_note']);
    await turn.close();
  });

  it('starts a user\'s tool\'s process through the sidecar\'s own startProcess, sandboxed where bubblewrap works', async () => {
    const turn = await client.openTurn({ agentId: 'a', turnId: 't4' });
    const result = await turn.call({ callId: 'wc', name: 'count_lines', argumentsJson: '{"path":"poem.txt"}' }).result;
    expect(result.error).toBeUndefined();
    expect(text(result)).toBe('poem.txt has 2 lines.');
    expect(result.details).toEqual({ lines: 2, sandboxed: bwrapWorks() });
    await turn.close();
  });

  it('offers a category in workflow task turns only when it opts in, after the built-in task tools', async () => {
    const turn = await client.openTurn({ agentId: 'a', turnId: 't3', kind: 'workflow_task', resultSchemaJson: '{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}' });
    const names = turn.tools.map((tool) => tool.name);
    expect(names).toEqual(['submit_result', 'count_words']);
    await turn.close();
  });
});

describe('--tools: a module that cannot load stops the start-up with its name', () => {
  const run = (args: string[], cwd: string) =>
    spawnSync(process.execPath, [`${root}dist/sidecar/main.js`, '--workspace', cwd, '--state-dir', join(cwd, 'state'), ...args], {
      cwd,
      env: { ...process.env, INIT_CWD: cwd },
      encoding: 'utf8',
      timeout: 30_000,
    });
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tool-modules-bad-'));
    writeFileSync(join(dir, 'throws.js'), "throw new Error('no database configured');\n");
    writeFileSync(join(dir, 'no-default.js'), 'export const tools = [];\n');
    writeFileSync(join(dir, 'bad-name.js'), "export default { name: 'has space', create: () => [] };\n");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ['./missing.js', /--tools \.\/missing\.js: cannot find the module/],
    ['not-installed-package', /--tools not-installed-package: cannot find the module/],
    ['./throws.js', /--tools \.\/throws\.js: the module .*throws\.js failed to load: no database configured/],
    ['./no-default.js', /--tools \.\/no-default\.js: the module has no default export/],
    ['./bad-name.js', /--tools \.\/bad-name\.js: a tool category's name must match/],
  ])('%s', (specifier, message) => {
    const result = run(['--tools', specifier], dir);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).not.toContain('listening');
  });
});
