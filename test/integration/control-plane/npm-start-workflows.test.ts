import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import type { ResponseItem } from '../../../controller/model/responses-model.js';
import { functionCallItem, messageItem } from '../../../controller/model/responses-wire.js';
import { startScriptedResponsesServer, type ScriptStep } from '../../fakes/scripted-responses-server.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'npm-start-workflows-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** `npm start`'s entry as a child process, against `baseURL`, with no key in its environment. */
async function start(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  const child = spawn(`${root}node_modules/.bin/tsx`, [`${root}controller/main.ts`, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

const toolNames = (body: Record<string, unknown>) => (body.tools as Array<{ name?: string }>).map((tool) => tool.name);
const outputsOf = (body: Record<string, unknown>) => (body.input as ResponseItem[]).filter((item) => item.type === 'function_call_output').map((item) => String(item.output));
const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };

describe('npm start with the control-plane tools', () => {
  it('starts a workflow from a text turn, runs it in the CLI process, and hides it from another agent', async () => {
    const dataDir = join(scratch, 'data');
    // One function for every request: the text turn and the task turn may interleave.
    const first: ScriptStep = (body) => {
      if (toolNames(body).includes('submit_result')) return { output: [functionCallItem({ callId: 's1', name: 'submit_result', arguments: JSON.stringify({ result: { n: 5 } }) })] };
      if (outputsOf(body).length > 0) return { output: [messageItem(`done: ${outputsOf(body)[0]!.split('\n')[0]}`)] };
      const definition = { name: 'from-a-turn', tasks: [{ id: 'alpha', prompt: 'count to five', result_schema: schema }] };
      return { output: [functionCallItem({ callId: 'w1', name: 'workflow_start', arguments: JSON.stringify(definition) })] };
    };
    const server = await startScriptedResponsesServer({ steps: [first, first, first] });
    try {
      const flags = ['--base-url', server.baseURL, '--model', 'scripted', '--data-dir', dataDir, '--approve', 'never'];
      const one = await start(['--agent-id', 'agent-a', '--prompt', 'start a workflow', ...flags]);
      expect(one.code, one.stderr).toBe(0);
      expect(toolNames(server.requests[0]!)).toEqual(expect.arrayContaining(['workflow_start', 'workflow_show', 'workflow_list', 'workflow_cancel']));
      expect(one.stdout).toMatch(/^done: Started/);
      expect(one.stderr).toMatch(/■ workflow "from-a-turn" \([0-9a-f-]{36}\): succeeded/);
      expect(one.stderr).toContain('alpha: {"n":5}');
      const store = await openSqliteStore({ dataDir });
      let runId: string;
      try {
        const runs = await store.workflows.listRuns({ limit: 10 });
        expect(runs.map((run) => [run.agentId, run.state, run.tasks[0]?.resultJson])).toEqual([['agent-a', 'succeeded', '{"n":5}']]);
        runId = runs[0]!.runId;
      } finally {
        await store.close();
      }

      const second = await startScriptedResponsesServer({
        steps: [
          { output: [functionCallItem({ callId: 'l1', name: 'workflow_list', arguments: '{}' }), functionCallItem({ callId: 'l2', name: 'workflow_show', arguments: JSON.stringify({ run_id: runId }) })] },
          (body) => ({ output: [messageItem(outputsOf(body).join(' | '))] }),
        ],
      });
      try {
        const other = await start(['--agent-id', 'agent-b', '--prompt', 'what runs?', '--base-url', second.baseURL, '--model', 'scripted', '--data-dir', dataDir, '--approve', 'never']);
        expect(other.code, other.stderr).toBe(0);
        expect(other.stdout).toContain('You have no workflow runs.');
        expect(other.stdout).toMatch(/not_found|no workflow run/);
        expect(other.stdout).not.toContain('"n":5');
      } finally {
        await second.close();
      }
    } finally {
      await server.close();
    }
  }, 120_000);
});
