import { describe, expect, it } from 'vitest';
import { namedCallIn } from '../../../../controller/model/embedded-named-call.js';
import { planEmbeddedResponse } from '../../../../controller/model/embedded-plan.js';
import type { ResponseItem } from '../../../../controller/model/responses-model.js';

const fn = (name: string, properties: Record<string, unknown>, required: string[] = Object.keys(properties)) => ({
  type: 'function',
  name,
  description: name,
  parameters: { type: 'object', properties, required },
  strict: false,
});
const tools = [
  fn('todo_write', { todos: { type: 'array' } }),
  fn('list_files', { pattern: { type: 'string' } }),
  fn('read_file', { path: { type: 'string' } }),
  fn('greet', { name: { type: 'string' }, times: { type: 'integer', minimum: 1 }, loud: { type: 'boolean' } }, ['name', 'times']),
  { type: 'namespace', name: 'notes', tools: [fn('add', { text: { type: 'string' } })] },
];
const ask = (text: string) => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const output = (callId: string, text: string) => ({ type: 'function_call_output', call_id: callId, output: text });

describe('the embedded model calls the tool the prompt names', () => {
  it('reads "call NAME with KEY=VALUE, ..." from the prompt', () => {
    expect(namedCallIn('call greet with name=Ada')).toEqual({ tool: 'greet', given: { name: 'Ada' } });
    expect(namedCallIn('Please call the tool `notes.add` with text="buy milk, eggs" and loud=true.')).toEqual({ tool: 'notes.add', given: { text: '"buy milk, eggs"', loud: 'true' } });
    expect(namedCallIn('What do you call this project?')).toBeUndefined();
    expect(namedCallIn('Look around this project and tell me what it is.')).toBeUndefined();
  });

  it('calls it alone, with the given values typed by its schema and the missing required ones sampled, then answers with its output', () => {
    const prompt = ask('call greet with name=Ada loud=true');
    const step1 = planEmbeddedResponse({ tools, input: [prompt] });
    expect(step1).toHaveLength(1);
    expect(step1[0]).toMatchObject({ type: 'function_call', name: 'greet' });
    expect(JSON.parse(String(step1[0]!.arguments))).toEqual({ name: 'Ada', loud: true, times: 1 });
    const step2 = planEmbeddedResponse({ tools, input: [prompt, ...step1, output(String(step1[0]!.call_id), 'Hello, Ada!')] as ResponseItem[] });
    expect(step2).toHaveLength(1);
    const text = JSON.stringify(step2[0]!.content);
    expect(text).toContain('I called greet with {');
    expect(text).toContain('Hello, Ada!');
  });

  it('finds a namespaced tool by namespace.name, and samples every argument when none is given', () => {
    const step = planEmbeddedResponse({ tools, input: [ask('call notes.add')] });
    expect(step[0]).toMatchObject({ name: 'add', namespace: 'notes' });
    expect(typeof JSON.parse(String(step[0]!.arguments)).text).toBe('string');
  });

  it('says so, and lists what is offered, when the named tool is not', () => {
    const step = planEmbeddedResponse({ tools, input: [ask('call shout with text=hi')] });
    expect(step[0]!.type).toBe('message');
    const text = JSON.stringify(step[0]!.content);
    expect(text).toContain('offers no tool of that name');
    expect(text).toContain('greet');
    expect(text).toContain('notes.add');
  });
});

describe('the embedded model on an empty workspace', () => {
  it('says the workspace is empty instead of taking "No files match" for a file', () => {
    const prompt = ask('What is here?');
    const step1 = planEmbeddedResponse({ tools, input: [prompt] });
    const after1 = [prompt, ...step1, output('call_1', 'Todo list: 0/3 done.'), output('call_2', 'No files match `**/*`.')] as ResponseItem[];
    const step2 = planEmbeddedResponse({ tools, input: after1 });
    // No README to read: the plan goes on to mark its todos done, then answers.
    expect(step2.map((item) => item.name)).toEqual(['todo_write']);
    const step3 = planEmbeddedResponse({ tools, input: [...after1, ...step2, output('call_3', 'done')] as ResponseItem[] });
    const text = JSON.stringify(step3[0]!.content);
    expect(text).not.toContain('No files match');
    expect(text).toContain('list_files found no files: the workspace is empty.');
  });
});
