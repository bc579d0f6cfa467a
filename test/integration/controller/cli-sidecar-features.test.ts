// What the sidecar offers, reached from npm start and workflow run (issue 38): users' tools, Brain,
// a system prompt, TLS to a running sidecar (and an error that names TLS when it is the cause).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { functionCallItem, messageItem } from '../../../controller/model/responses-wire.js';
import { startScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { runToExit } from '../../fixtures/run-to-exit.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'cli-features-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.OPENAI_API_KEY;
  if (!extra.OPENAI_BASE_URL) delete env.OPENAI_BASE_URL;
  delete env.DATABASE_URL;
  return env;
}
const npmStart = (args: string[], env: NodeJS.ProcessEnv = {}) => runToExit('npm', ['start', '--silent', '--', '--data-dir', join(scratch, 'data'), ...args], { cwd: root, env: cleanEnv(env), timeoutMs: 90_000 });
const toolNames = (body: Record<string, unknown>) => JSON.stringify(body.tools ?? []);

describe('npm start reaches what the sidecar offers', () => {
  it("--tools loads a module of the reader's own tools into the started sidecar, and the embedded model calls the tool the prompt names", async () => {
    const { code, stdout, stderr } = await npmStart(['--tools', './examples/word-tools.js', '--prompt', 'call count_words with path=README.md']);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('I called count_words with {"path":"README.md"}');
    expect(stdout).toMatch(/README\.md has \d+ words/);
  }, 120_000);

  it('refuses a started-sidecar flag with --sidecar, and names the fix', async () => {
    const { code, stderr } = await npmStart(['--sidecar', '127.0.0.1:9', '--brain', scratch]);
    expect(code).toBe(2);
    expect(stderr).toContain('--brain goes to the sidecar this command starts; a running --sidecar has its own (--enable-brain turns on');
  }, 60_000);

  it('--instructions replaces the system prompt the model gets', async () => {
    const model = await startScriptedResponsesServer({ steps: [{ output: [messageItem('done')] }] });
    try {
      const { code, stderr } = await npmStart(['--base-url', model.baseURL, '--tool-search', 'client', '--instructions', 'You are Zed, a terse agent.', '--prompt', 'hi']);
      expect(code, stderr).toBe(0);
      expect(String(model.requests[0]!.instructions)).toMatch(/^You are Zed, a terse agent\./);
      expect(String(model.requests[0]!.instructions)).not.toContain("working in a user's workspace");
    } finally {
      await model.close();
    }
  }, 90_000);
});

describe('workflow run --brain: task turns get the Brain tools', () => {
  it('offers recall to a task turn and answers it from the knowledge base', async () => {
    const brain = join(scratch, 'brain');
    mkdirSync(brain, { recursive: true });
    writeFileSync(join(brain, 'ada.md'), '# Ada Lovelace\n\nAda wrote the first program for the Analytical Engine.\n');
    const workflow = join(scratch, 'wf.json');
    writeFileSync(workflow, JSON.stringify({ name: 'recall', tasks: [{ id: 't1', prompt: 'Who wrote the first program?', result_schema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] } }] }));
    const model = await startScriptedResponsesServer({
      steps: [
        { output: [functionCallItem({ callId: 'c1', name: 'recall', arguments: JSON.stringify({ query: 'Analytical' }) })] },
        { output: [functionCallItem({ callId: 'c2', name: 'submit_result', arguments: JSON.stringify({ result: { who: 'Ada' } }) })] },
      ],
    });
    try {
      const result = await runToExit(
        `${root}node_modules/.bin/tsx`,
        [`${root}controller/control-plane-main.ts`, 'workflow', 'run', workflow, '--data-dir', join(scratch, 'wf-data'), '--base-url', model.baseURL, '--tool-search', 'client', '--brain', brain, '--sandbox', 'off'],
        { cwd: root, env: cleanEnv(), timeoutMs: 90_000 },
      );
      expect(result.code, result.stderr).toBe(0);
      expect(toolNames(model.requests[0]!)).toContain('"recall"');
      expect(JSON.stringify(model.requests[1]!.input)).toContain('Ada wrote the first program');
      expect(result.stdout).toContain('{"task":"t1","result":{"who":"Ada"}}');
    } finally {
      await model.close();
    }
  }, 120_000);
});

const needsOpenssl = requireSystemTools({ suite: 'npm start over TLS', tools: [{ name: 'openssl', executable: '/usr/bin/openssl' }], aptPackages: ['openssl'] });

describe('npm start --sidecar over TLS', needsOpenssl, () => {
  let sidecar: StartedSidecar;
  let cert: string;
  let otherCert: string;
  beforeAll(async () => {
    const makeCert = (name: string) => {
      const key = join(scratch, `${name}.key`);
      const file = join(scratch, `${name}.pem`);
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', file, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
      return { key, file };
    };
    const own = makeCert('sidecar');
    cert = own.file;
    otherCert = makeCert('other').file;
    mkdirSync(join(scratch, 'tls-workspace'));
    sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', join(scratch, 'tls-workspace'), '--state-dir', join(scratch, 'tls-state'), '--tls-cert', cert, '--tls-key', own.key] });
  }, 60_000);
  afterAll(async () => {
    await sidecar?.stop();
  });

  it('runs a turn with --ca-file; without it, or with the wrong CA, the error names TLS and the fix', async () => {
    const ok = await npmStart(['--sidecar', sidecar.address, '--ca-file', cert, '--prompt', 'What is here?']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('embedded scripted model');

    const plain = await npmStart(['--sidecar', sidecar.address, '--prompt', 'What is here?']);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain(`the sidecar at ${sidecar.address} speaks TLS and this client connected in plaintext: give --ca-file FILE`);

    const wrong = await npmStart(['--sidecar', sidecar.address, '--ca-file', otherCert, '--prompt', 'What is here?']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(`the TLS handshake with the sidecar at ${sidecar.address} failed:`);
    expect(wrong.stderr).toContain('check --ca-file');
  }, 180_000);
});
