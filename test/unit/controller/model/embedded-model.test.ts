import { afterEach, describe, expect, it } from 'vitest';
import { planEmbeddedResponse } from '../../../../controller/model/embedded-plan.js';
import { startEmbeddedModel, type EmbeddedModel } from '../../../../controller/model/embedded-model.js';
import { createOpenAIResponsesModel } from '../../../../controller/model/openai-responses-model.js';
import type { ResponseItem } from '../../../../controller/model/responses-model.js';

const fn = (name: string, properties: Record<string, unknown>, required: string[] = Object.keys(properties)) => ({
  type: 'function',
  name,
  description: name,
  parameters: { type: 'object', properties, required },
  strict: false,
});
const allTools = [
  fn('todo_write', { todos: { type: 'array' } }),
  fn('list_files', { pattern: { type: 'string' } }),
  fn('read_file', { path: { type: 'string' } }),
];
const user = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What is this project?' }] };
const output = (callId: string, text: string) => ({ type: 'function_call_output', call_id: callId, output: text });

describe('planEmbeddedResponse', () => {
  it('plays the plan step by step from the input items alone', () => {
    const step1 = planEmbeddedResponse({ tools: allTools, input: [user] });
    expect(step1.map((item) => item.name)).toEqual(['todo_write', 'list_files']);
    expect(JSON.parse(String(step1[1]!.arguments))).toEqual({ pattern: '**/*' });
    const todos = (JSON.parse(String(step1[0]!.arguments)) as { todos: Array<{ status: string }> }).todos;
    expect(todos.map((t) => t.status)).toEqual(['in_progress', 'pending', 'pending']);

    const input2: ResponseItem[] = [user, ...step1, output('call_1', 'Todo list: 0/3 done.'), output('call_2', 'README.md\npackage.json\nsrc/cli.js')];
    const step2 = planEmbeddedResponse({ tools: allTools, input: input2 });
    expect(step2.map((item) => [item.name, JSON.parse(String(item.arguments)).path])).toEqual([
      ['read_file', 'README.md'],
      ['read_file', 'package.json'],
    ]);
    expect(step2.map((item) => item.call_id)).toEqual(['call_3', 'call_4']);

    const input3 = [...input2, ...step2, output('call_3', 'README.md: lines 1-3 of 3\n1\t# Tiny Notes\n2\t\n3\tA note keeper.'), output('call_4', 'package.json: lines 1-1 of 1\n1\t{}')];
    const step3 = planEmbeddedResponse({ tools: allTools, input: input3 });
    expect(step3.map((item) => item.name)).toEqual(['todo_write']);
    expect(String(step3[0]!.arguments)).not.toContain('pending');

    const step4 = planEmbeddedResponse({ tools: allTools, input: [...input3, ...step3, output('call_5', 'done')] });
    expect(step4).toHaveLength(1);
    expect(step4[0]!.type).toBe('message');
    const text = JSON.stringify(step4[0]!.content);
    expect(text).toContain('What is this project?');
    expect(text).toContain('3 files');
    expect(text).toContain('Tiny Notes');
    expect(text).toContain('A note keeper.');
  });

  it('skips steps whose tool is absent and follows namespaces and flattened names', () => {
    const onlyRead = planEmbeddedResponse({ tools: [fn('read_file', { path: { type: 'string' } })], input: [user] });
    expect(onlyRead.map((item) => item.name)).toEqual(['read_file']);
    const namespaced = planEmbeddedResponse({
      tools: [{ type: 'namespace', name: 'fs', description: 'files', tools: [fn('list_files', { pattern: { type: 'string' } })] }],
      input: [user],
    });
    expect(namespaced[0]).toMatchObject({ name: 'list_files', namespace: 'fs' });
    const flattened = planEmbeddedResponse({ tools: [fn('fs__list_files', { pattern: { type: 'string' } })], input: [user] });
    expect(flattened[0]).toMatchObject({ name: 'fs__list_files' });
    const none = planEmbeddedResponse({ tools: [], input: [user] });
    expect(none[0]!.type).toBe('message');
  });
});

describe('startEmbeddedModel', () => {
  let model: EmbeddedModel | undefined;
  afterEach(async () => {
    await model?.close();
  });

  it('streams SSE with the real event names, in order, with sequence numbers', async () => {
    model = await startEmbeddedModel();
    const response = await fetch(`${model.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, tools: allTools, input: [user] }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const blocks = (await response.text()).trim().split('\n\n');
    const events = blocks.map((block) => {
      const [eventLine, dataLine] = block.split('\n');
      const data = JSON.parse(dataLine!.slice('data: '.length)) as { type: string; sequence_number: number };
      expect(eventLine).toBe(`event: ${data.type}`);
      return data;
    });
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const types = events.map((event) => event.type);
    expect(types.slice(0, 3)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added']);
    expect(types).toContain('response.function_call_arguments.delta');
    expect(types.filter((type) => type === 'response.function_call_arguments.done')).toHaveLength(2);
    expect(types.filter((type) => type === 'response.output_item.done')).toHaveLength(2);
    expect(types.at(-1)).toBe('response.completed');
  });

  it('answers through the real openai client, streaming and not, with the same items', async () => {
    model = await startEmbeddedModel();
    for (const stream of [true, false]) {
      const client = createOpenAIResponsesModel({ model: 'embedded', apiKey: 'none', baseURL: model.baseURL, stream });
      const response = await client.create({ instructions: 'x', input: [user], tools: allTools }, { signal: AbortSignal.timeout(10_000) });
      expect(response.output.map((item) => item.name)).toEqual(['todo_write', 'list_files']);
      expect(response.usage?.input_tokens).toBeGreaterThan(0);
    }
    expect(model.requests()).toBe(2);
  });

  it('rejects a body without input with a 400 the client reports', async () => {
    model = await startEmbeddedModel();
    const response = await fetch(`${model.baseURL}/responses`, { method: 'POST', body: '{"model":"m"}' });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('input array');
  });
});
