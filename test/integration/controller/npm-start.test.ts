import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runToExit, type ChildExit } from '../../fixtures/run-to-exit.js';
import { describe, expect, it } from 'vitest';
import { startScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { bwrapWorks } from '../../fixtures/test-sandbox.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs `npm start -- ...args` as a child process with no key and no endpoint in its environment. */
function npmStart(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<ChildExit> {
  const env = { ...process.env, ...extraEnv };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  return runToExit('npm', ['start', '--silent', '--', ...args], { cwd: root, env });
}

describe('npm start', () => {
  it('runs one turn on the embedded model against a spawned sidecar, prints the answer and exits 0', async () => {
    const events = join(mkdtempSync(join(tmpdir(), 'npm-start-')), 'events.jsonl');
    const { code, stdout, stderr } = await npmStart(['--prompt', 'What is in here?', '--events-file', events]);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('You asked: "What is in here?"');
    expect(stdout).toContain('embedded scripted model');
    expect(stderr).toContain('turn finished: completed');
    const lines = readFileSync(events, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { type: string; status?: string });
    expect(lines[0]!.type).toBe('turn-started');
    expect(lines.at(-1)).toMatchObject({ type: 'turn-finished', status: 'completed' });
    // The answer cites what the tools read from the sample workspace copy.
    expect(stdout).toContain('README.md');
    expect(stdout).toContain('Tiny Notes');
    expect(stdout).toContain('"tiny-notes" 0.3.0');
    expect(lines.filter((line) => line.type === 'activity-started').length).toBeGreaterThanOrEqual(4);
  }, 90_000);

  it('says what its commands run under: the sandbox where bubblewrap works; where it cannot be had, the turn still completes and the line names the fix', async () => {
    const unavailable = await npmStart(['--prompt', 'What is in here?'], { TOOLS_RUNTIME_BWRAP: '/nonexistent/bwrap' });
    expect(unavailable.code, unavailable.stderr).toBe(0);
    expect(unavailable.stderr).toContain('sandbox unavailable: commands will be refused');
    expect(unavailable.stderr).toContain('apt-get install bubblewrap');
    expect(unavailable.stderr).toContain('--sandbox off');
    expect(unavailable.stderr).toContain('turn finished: completed');
    if (bwrapWorks()) {
      const sandboxed = await npmStart(['--prompt', 'What is in here?']);
      expect(sandboxed.code, sandboxed.stderr).toBe(0);
      expect(sandboxed.stderr).toContain('commands run sandboxed (workspace-write, network off)');
    }
  }, 120_000);

  it('prints usage on --help and exits 2 with a reason on a bad flag', async () => {
    const help = await npmStart(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--tool-search MODE');
    const bad = await npmStart(['--tool-search', 'psychic']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--tool-search must be "hosted" or "client", not "psychic"');
  }, 90_000);

  it('uses a Responses server given by --base-url, with no key, and exits 1 with a one-line reason on a 401', async () => {
    const answer = { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Answered by the server of my own.' }] };
    const server = await startScriptedResponsesServer({
      steps: [{ output: [answer] as never }, { status: 401, body: { error: { message: 'bad key' } } }],
    });
    try {
      const ok = await npmStart(['--base-url', server.baseURL, '--model', 'my-model', '--quiet']);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain('Answered by the server of my own.');
      expect(server.requests[0]).toMatchObject({ model: 'my-model', store: false, stream: true });
      const names = (server.requests[0]!.tools as Array<{ name?: string }>).map((tool) => tool.name);
      expect(names).toContain('todo_write');

      const refused = await npmStart(['--base-url', server.baseURL, '--quiet']);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim().split('\n').at(-1)).toContain('rejected the API key (401)');
    } finally {
      await server.close();
    }
  }, 90_000);
});
