// `npm start -- --api chat`: a server that speaks only Chat Completions drives the same turn, tools,
// streaming and argument repair as the Responses path, through the openai package (issue 38).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createOpenAIChatModel } from '../../../controller/model/openai-chat-model.js';
import { startScriptedChatServer } from '../../fakes/scripted-chat-server.js';
import { runToExit } from '../../fixtures/run-to-exit.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

function npmStart(args: string[]) {
  const env = { ...process.env };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  delete env.DATABASE_URL;
  return runToExit('npm', ['start', '--silent', '--', '--approve', 'never', '--data-dir', join(mkdtempSync(join(tmpdir(), 'chat-api-')), 'data'), ...args], { cwd: root, env, timeoutMs: 90_000 });
}

describe('npm start --api chat', () => {
  it.each([['--stream'], ['--no-stream']])('runs a turn with tools on a Chat Completions server (%s): calls, repaired arguments, results as tool messages', async (streamFlag) => {
    const workspace = mkdtempSync(join(tmpdir(), 'chat-ws-'));
    writeFileSync(join(workspace, 'notes.md'), '# Notes\nbuy milk\n');
    const server = await startScriptedChatServer({
      replies: [
        // Two calls at once; read_file's arguments come in a code fence, as weak models write them: the sidecar repairs it.
        { toolCalls: [{ id: 'call_a', name: 'list_files', arguments: '{"pattern":"**/*"}' }, { id: 'call_b', name: 'read_file', arguments: '```json\n{"path":"notes.md"}\n```' }] },
        { content: 'The workspace has notes.md, which says to buy milk.' },
      ],
    });
    try {
      const { code, stdout, stderr } = await npmStart(['--api', 'chat', '--base-url', server.baseURL, '--model', 'local-model', '--workspace', workspace, '--prompt', 'What is here?', streamFlag]);
      expect(code, stderr).toBe(0);
      expect(stdout.trim()).toBe('The workspace has notes.md, which says to buy milk.');
      expect(stderr).toContain('(Chat Completions)');
      const [first, second] = server.requests as Array<{ model: string; stream: boolean; messages: Array<Record<string, unknown>>; tools: Array<{ type: string; function: { name: string } }> }>;
      expect(first!.model).toBe('local-model');
      expect(first!.stream).toBe(streamFlag === '--stream');
      expect(first!.messages[0]).toMatchObject({ role: 'system' });
      expect(first!.messages[1]).toEqual({ role: 'user', content: 'What is here?' });
      const names = first!.tools.map((tool) => tool.function.name);
      expect(names).toEqual(expect.arrayContaining(['list_files', 'read_file', 'run_command']));
      expect(first!.tools.every((tool) => tool.type === 'function')).toBe(true);
      // The second request carries the assistant's calls and one tool message per call, in order.
      const assistant = second!.messages.find((message) => message.role === 'assistant') as { tool_calls: Array<{ id: string }> };
      expect(assistant.tool_calls.map((call) => call.id)).toEqual(['call_a', 'call_b']);
      const tools = second!.messages.filter((message) => message.role === 'tool') as Array<{ tool_call_id: string; content: string }>;
      expect(tools.map((message) => message.tool_call_id)).toEqual(['call_a', 'call_b']);
      expect(tools[0]!.content).toContain('notes.md');
      expect(tools[1]!.content).toContain('buy milk');
    } finally {
      await server.close();
    }
  }, 120_000);

  it('refuses --api chat with the embedded model, and hosted tool search, with the reason', async () => {
    const embedded = await npmStart(['--api', 'chat']);
    expect(embedded.code).toBe(2);
    expect(embedded.stderr).toContain('--api chat needs --base-url URL');
    const hosted = await npmStart(['--api', 'chat', '--base-url', 'http://127.0.0.1:9/v1', '--tool-search', 'hosted']);
    expect(hosted.code).toBe(2);
    expect(hosted.stderr).toContain('--tool-search hosted is a Responses API feature');
  }, 60_000);
});

describe('createOpenAIChatModel', () => {
  it('retries a 429 after its retry-after, and reports a cut-off answer as incomplete', async () => {
    const server = await startScriptedChatServer({
      replies: [{ status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after-ms': '10' } }, { content: 'partial', finishReason: 'length' }],
    });
    try {
      const model = createOpenAIChatModel({ model: 'm', apiKey: 'k', baseURL: server.baseURL });
      const response = await model.create({ instructions: 'be brief', input: [{ type: 'message', role: 'user', content: 'hi' }], tools: [] }, { signal: AbortSignal.timeout(20_000) });
      expect(server.requests).toHaveLength(2);
      expect(response.status).toBe('incomplete');
      expect(response.reason).toContain('length');
      expect(response.output[0]).toMatchObject({ type: 'message', content: [{ type: 'output_text', text: 'partial' }] });
      expect(response.usage).toMatchObject({ input_tokens: 101, output_tokens: 10 });
    } finally {
      await server.close();
    }
  });
});
