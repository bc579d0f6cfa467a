/**
 * The embedded model's "thinking": a deterministic plan derived from a Responses request alone
 * (the prompt, the tools offered, the items so far), stateless like a real model. A scripted
 * stand-in for demos and tests; it does not understand language.
 */
import { isJSONObject, type JSONObject } from '../../src/index.js';
import type { ResponseItem } from './responses-model.js';
import { functionCallItem, messageItem } from './responses-wire.js';
import { nativeAnswerLines, planNativeStep } from './embedded-native-plan.js';
import { sampleJsonValue } from './sample-json-value.js';
import { namedCallAnswer, namedCallArguments, namedCallIn, type NamedCall } from './embedded-named-call.js';

/** A tool as offered in the request: the name to call, its namespace, its parameters. */
interface OfferedTool {
  callName: string;
  namespace?: string;
  parameters: JSONObject;
}

/** The function tools of a request, by their plain name (a flattened `ns__name` also by `name`). */
export function offeredTools(tools: unknown): Map<string, OfferedTool> {
  const found = new Map<string, OfferedTool>();
  const add = (tool: JSONObject, namespace?: string) => {
    if (tool.type !== 'function' || typeof tool.name !== 'string' || tool.defer_loading === true) return;
    const parameters = isJSONObject(tool.parameters) ? tool.parameters : {};
    const entry = { callName: tool.name, ...(namespace ? { namespace } : {}), parameters };
    found.set(tool.name, entry);
    const flat = tool.name.lastIndexOf('__');
    if (flat > 0 && !found.has(tool.name.slice(flat + 2))) found.set(tool.name.slice(flat + 2), entry);
  };
  for (const tool of Array.isArray(tools) ? tools : []) {
    if (!isJSONObject(tool)) continue;
    if (tool.type === 'namespace' && Array.isArray(tool.tools)) {
      for (const member of tool.tools) if (isJSONObject(member)) add(member, String(tool.name));
    } else add(tool);
  }
  return found;
}

/** Arguments for `tool`: the wanted values its schema has, plus defaults for required fields. */
function argumentsFor(tool: OfferedTool, wanted: Record<string, unknown>): string {
  const properties = isJSONObject(tool.parameters.properties) ? tool.parameters.properties : {};
  const required = Array.isArray(tool.parameters.required) ? (tool.parameters.required as string[]) : [];
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(wanted)) if (key in properties) result[key] = value;
  for (const key of required) {
    if (key in result) continue;
    const type = isJSONObject(properties[key]) ? properties[key].type : undefined;
    result[key] = type === 'number' || type === 'integer' ? 0 : type === 'boolean' ? false : type === 'array' ? [] : '.';
  }
  return JSON.stringify(result);
}

function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return output.map((part) => (isJSONObject(part) && typeof part.text === 'string' ? part.text : '')).join('\n');
  return '';
}

/** The first user message's text. */
function promptOf(input: ResponseItem[]): string {
  for (const item of input) {
    if (item.type !== 'message' || item.role !== 'user') continue;
    if (typeof item.content === 'string') return item.content;
    if (Array.isArray(item.content)) return outputText(item.content);
  }
  return '';
}

const PLAN = [
  { id: 'look', content: 'Look at the files in the workspace' },
  { id: 'read', content: 'Read the README' },
  { id: 'answer', content: 'Answer with what I found' },
];

/** The lines of a read_file output without its header and line numbers. */
function fileLines(text: string): string[] {
  return text
    .split('\n')
    .slice(1)
    .map((line) => line.replace(/^\s*\d+\t/, '').trim())
    .filter((line) => line.length > 0);
}

/** What the plans below see of a request: its input, the tools offered, the calls and their outputs. */
interface PlanView {
  input: ResponseItem[];
  tools: Map<string, OfferedTool>;
  calls: Array<ResponseItem & { call_id: string; name: string }>;
  outputs: Map<string, string>;
}

/**
 * The next output items for a request `body` (`tools`, `input`). One plan plays per turn, the
 * first that applies: a workflow task submits a result; a prompt that names a tool ("call greet
 * with name=Ada") calls it and reports what it returned; otherwise the survey: write a todo list
 * and list the files (together), read the README (and package.json when listed, together), mark
 * the todos completed, then answer citing what the tools returned. Steps whose tool is absent are
 * skipped; the step is derived from the calls already in `input`. (A new plan is a function of
 * `PlanView` tried in this order.)
 */
export function planEmbeddedResponse(body: { tools?: unknown; input?: unknown }): ResponseItem[] {
  const input = (Array.isArray(body.input) ? body.input : []).filter(isJSONObject) as ResponseItem[];
  const tools = offeredTools(body.tools);
  const calls = input.filter((item) => item.type === 'function_call') as Array<ResponseItem & { call_id: string; name: string }>;
  const outputs = new Map<string, string>();
  for (const item of input) if (item.type === 'function_call_output') outputs.set(String(item.call_id), outputText(item.output));
  const plainName = (name: string) => (name.includes('__') ? name.slice(name.lastIndexOf('__') + 2) : name);
  const callsOf = (name: string) => calls.filter((call) => plainName(call.name) === name);
  let nextCall = calls.length;
  const call = (name: string, wanted: Record<string, unknown>): ResponseItem | undefined => {
    const tool = tools.get(name);
    if (!tool) return undefined;
    return functionCallItem({
      callId: `call_${++nextCall}`,
      name: tool.callName,
      ...(tool.namespace ? { namespace: tool.namespace } : {}),
      arguments: argumentsFor(tool, wanted),
    });
  };
  const present = (items: Array<ResponseItem | undefined>) => items.filter((item): item is ResponseItem => item !== undefined);

  // A workflow task turn (submit_result is offered): submit a value that fits the task's schema.
  const submit = tools.get('submit_result');
  if (submit) return planTaskResponse(input, submit, callsOf('submit_result'), outputs, nextCall);
  // The prompt names a tool: call it, then say what it returned.
  const named = namedCallIn(promptOf(input));
  if (named) return planNamedCall(named, { input, tools, calls, outputs });

  // Step 1: plan and look, together.
  if (callsOf('todo_write').length === 0 && callsOf('list_files').length === 0) {
    const step = present([
      call('todo_write', { todos: PLAN.map((item, index) => ({ ...item, status: index === 0 ? 'in_progress' : 'pending' })) }),
      call('list_files', { pattern: '**/*', path: '.' }),
    ]);
    if (step.length > 0) return step;
  }
  const listing = callsOf('list_files').map((item) => outputs.get(item.call_id) ?? '').join('\n');
  // "No files match ..." is list_files saying the workspace is empty, not a file.
  const listed = listing.split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('[') && !line.startsWith('No files match'));
  // Step 2: read the README (and package.json when listed), together.
  const emptyWorkspace = callsOf('list_files').length > 0 && listed.length === 0;
  if (callsOf('read_file').length === 0 && !emptyWorkspace) {
    const readme = listed.find((file) => /^readme(\.md)?$/i.test(file)) ?? listed.find((file) => file.toLowerCase().endsWith('.md')) ?? 'README.md';
    const step = present([
      call('read_file', { path: readme }),
      listed.includes('package.json') ? call('read_file', { path: 'package.json' }) : undefined,
    ]);
    if (step.length > 0) return step;
  }
  // The provider's own coding tools, when offered: a shell call, then a patch (embedded-native-plan.ts).
  const nativeStep = planNativeStep(input, body.tools);
  if (nativeStep) return nativeStep;
  // Step 3: mark the plan done.
  if (callsOf('todo_write').length === 1) {
    const step = present([call('todo_write', { todos: PLAN.map((item) => ({ ...item, status: 'completed' })) })]);
    if (step.length > 0) return step;
  }
  return [messageItem(answer(promptOf(input), listed, { made: callsOf('list_files').length > 0 }, callsOf('read_file').map((item) => ({ item, output: outputs.get(item.call_id) ?? '' })), tools.size, nativeAnswerLines(input)))];
}

/** The tool a named call means: `name`, `namespace.name` or `namespace__name`. */
function findNamed(tools: Map<string, OfferedTool>, name: string): OfferedTool | undefined {
  const dot = name.lastIndexOf('.');
  if (dot > 0) {
    const [namespace, member] = [name.slice(0, dot), name.slice(dot + 1)];
    for (const tool of tools.values()) if (tool.namespace === namespace && tool.callName === member) return tool;
    return tools.get(`${namespace}__${member}`);
  }
  return tools.get(name);
}

/** A prompt that names a tool: call it once, then answer with what it returned (or that it is not offered). */
function planNamedCall(named: NamedCall, view: PlanView): ResponseItem[] {
  const made = view.calls[0];
  if (made) {
    return [messageItem(namedCallAnswer(named, { name: made.name, arguments: String(made.arguments), output: view.outputs.get(made.call_id) ?? '' }))];
  }
  const tool = findNamed(view.tools, named.tool);
  if (!tool) {
    const offered = [...new Set([...view.tools.values()].map((entry) => (entry.namespace ? `${entry.namespace}.${entry.callName}` : entry.callName)))];
    return [messageItem(namedCallAnswer(named, { offered }))];
  }
  return [
    functionCallItem({
      callId: 'call_1',
      name: tool.callName,
      ...(tool.namespace ? { namespace: tool.namespace } : {}),
      arguments: JSON.stringify(namedCallArguments(tool.parameters, named.given)),
    }),
  ];
}

/**
 * A task turn: submit a value generated from the result schema; after a rejection, say so in prose
 * (the loop's repair instruction then asks again, and a second rejection ends the attempt).
 */
function planTaskResponse(
  input: ResponseItem[],
  submit: OfferedTool,
  submissions: Array<ResponseItem & { call_id: string }>,
  outputs: Map<string, string>,
  callCount: number,
): ResponseItem[] {
  const last = submissions.at(-1);
  const lastItem = input.at(-1);
  const askedAgain = lastItem?.type === 'message' && lastItem.role === 'user';
  if (last && !askedAgain) {
    return [messageItem(`I could not produce a result the schema accepts: ${(outputs.get(last.call_id) ?? '').split('\n')[0]}`)];
  }
  const properties = isJSONObject(submit.parameters.properties) ? submit.parameters.properties : {};
  const text = promptOf(input).split('\n')[0] ?? '';
  const result = sampleJsonValue(properties.result ?? {}, { root: submit.parameters, text });
  return [
    functionCallItem({
      callId: `call_${callCount + 1}`,
      name: submit.callName,
      ...(submit.namespace ? { namespace: submit.namespace } : {}),
      arguments: JSON.stringify({ result }),
    }),
  ];
}

function parseManifest(body: string[]): { name: string; version?: string; description?: string } | undefined {
  try {
    const parsed: unknown = JSON.parse(body.join('\n'));
    if (!isJSONObject(parsed) || typeof parsed.name !== 'string') return undefined;
    return {
      name: parsed.name,
      ...(typeof parsed.version === 'string' ? { version: parsed.version } : {}),
      ...(typeof parsed.description === 'string' ? { description: parsed.description } : {}),
    };
  } catch {
    return undefined;
  }
}

function answer(prompt: string, listed: string[], listing: { made: boolean }, reads: Array<{ item: ResponseItem; output: string }>, toolCount: number, nativeLines: string[] = []): string {
  const lines = [`You asked: "${prompt.trim() || '(no prompt)'}"`, 'Here is what I found using the tools:'];
  if (listed.length > 0) {
    const shown = listed.slice(0, 12);
    lines.push(`- list_files shows ${listed.length} file${listed.length === 1 ? '' : 's'}: ${shown.join(', ')}${listed.length > shown.length ? ', …' : ''}.`);
  }
  for (const { item, output } of reads) {
    let path = '';
    try {
      path = String((JSON.parse(String(item.arguments)) as { path?: unknown }).path ?? '');
    } catch {
      // arguments were ours; unparseable only if a server rewrote them
    }
    const body = fileLines(output);
    const manifest = path.endsWith('package.json') ? parseManifest(body) : undefined;
    if (manifest) {
      lines.push(`- read_file ${path}: the package is "${manifest.name}"${manifest.version ? ` ${manifest.version}` : ''}${manifest.description ? `, "${manifest.description}"` : ''}.`);
      continue;
    }
    const heading = body.find((line) => line.startsWith('#'))?.replace(/^#+\s*/, '');
    const first = body.find((line) => !line.startsWith('#') && !/^[{}[\]]/.test(line));
    if (/error|not found|no such/i.test(output.split('\n')[0] ?? '') && body.length === 0) {
      lines.push(`- read_file ${path} failed: ${output.split('\n')[0]}`);
    } else {
      lines.push(`- read_file ${path}: ${heading ? `titled "${heading}"; ` : ''}${first ? `it says "${first}"` : `${body.length} lines`}.`);
    }
  }
  lines.push(...nativeLines);
  if (listed.length === 0 && listing.made) lines.push('- list_files found no files: the workspace is empty.');
  if (listed.length === 0 && reads.length === 0 && !listing.made) {
    lines.push(toolCount === 0 ? '- No tools were offered, so I could not look at the workspace.' : '- The workspace tools I use (list_files, read_file) were not offered.');
  }
  lines.push('(Answer from the embedded scripted model, a stand-in for a real one.)');
  return lines.join('\n');
}
