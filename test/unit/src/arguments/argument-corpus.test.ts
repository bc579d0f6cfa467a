// How real models break function-call arguments, each with the exact outcome the runtime gives.
import { describe, expect, it } from 'vitest';
import { validateToolArguments, type RepairStep, type WorkerAgentTool } from '../../../../src/index.js';
import { listFiles, rawCounter, todo, writeFile } from './corpus-tools.js';

type Expected =
  | { ok: true; value: unknown; repairs: RepairStep[] }
  | { ok: false; code: 'invalid_arguments' | 'arguments_too_large'; repairs: RepairStep[]; mentions: string[] };

interface Case {
  name: string;
  tool: WorkerAgentTool;
  input: string;
  maxBytes?: number;
  expected: Expected;
}

const file = { path: 'a.txt', content: 'hi', mode: 'create' };
const ok = (value: unknown, ...repairs: RepairStep[]): Expected => ({ ok: true, value, repairs });
const fail = (mentions: string[], ...repairs: RepairStep[]): Expected => ({ ok: false, code: 'invalid_arguments', repairs, mentions });
const clean = '{"path":"a.txt","content":"hi"}';
const task = { id: 1, title: 'write tests', status: 'pending' };
const taskJson = '{"id":1,"title":"write tests","status":"pending","note":null}';

const cases: Case[] = [
  // Clean and empty.
  { name: 'clean arguments', tool: writeFile, input: clean, expected: ok(file) },
  { name: 'empty string for a tool with optional fields', tool: listFiles, input: '', expected: ok({ dir: '.' }, 'empty_to_object') },
  { name: 'whitespace only', tool: listFiles, input: ' \n\t ', expected: ok({ dir: '.' }, 'empty_to_object') },
  { name: 'empty string where fields are required', tool: writeFile, input: '', expected: fail(['- path: required', '- content: required'], 'empty_to_object') },

  // Double encoding.
  { name: 'double-encoded object', tool: writeFile, input: JSON.stringify(clean), expected: ok(file, 'unwrap_double_encoded') },
  { name: 'double-encoded object with a trailing comma', tool: writeFile, input: JSON.stringify('{"path":"a.txt","content":"hi",}'), expected: ok(file, 'unwrap_double_encoded', 'jsonrepair') },
  { name: 'double-encoded code fence', tool: writeFile, input: JSON.stringify('```json\n' + clean + '\n```'), expected: ok(file, 'unwrap_double_encoded', 'extract_code_fence') },
  { name: 'triple encoding: a string holding a string is not unwrapped', tool: writeFile, input: JSON.stringify(JSON.stringify(clean)), expected: fail(['expected the arguments to be a JSON object, got a string']) },
  { name: 'a JSON string of prose', tool: writeFile, input: '"write the file please"', expected: fail(['got a string ("write the file please")']) },

  // Code fences.
  { name: 'fence with a language', tool: writeFile, input: '```json\n' + clean + '\n```', expected: ok(file, 'extract_code_fence') },
  { name: 'fence without a language', tool: writeFile, input: '```\n' + clean + '\n```', expected: ok(file, 'extract_code_fence') },
  { name: 'fence with prose around it', tool: writeFile, input: 'Here are the arguments:\n```json\n' + clean + '\n```\nLet me know if that works.', expected: ok(file, 'extract_code_fence') },
  { name: 'fence on one line', tool: writeFile, input: '```' + clean + '```', expected: ok(file, 'extract_code_fence') },
  { name: 'unclosed fence (truncated output)', tool: writeFile, input: '```json\n{"path":"a.txt","content":"hi"', expected: ok(file, 'extract_code_fence', 'jsonrepair') },
  { name: 'fence holding a trailing comma', tool: writeFile, input: '```js\n{"path":"a.txt","content":"hi",}\n```', expected: ok(file, 'extract_code_fence', 'jsonrepair') },
  { name: 'empty fence', tool: writeFile, input: '```json\n```', expected: fail(['the code fence is empty'], 'extract_code_fence') },

  // Prose around a JSON object.
  { name: 'prose before and after an object', tool: writeFile, input: 'I will write it now: ' + clean + ' Done.', expected: ok(file, 'extract_balanced_object') },
  { name: 'braces inside strings do not fool the scan', tool: writeFile, input: 'Calling: {"path":"a}b.txt","content":"{x"} ok', expected: ok({ ...file, path: 'a}b.txt', content: '{x' }, 'extract_balanced_object') },
  { name: 'prose and single quotes', tool: writeFile, input: "Arguments: {'path': 'a.txt', 'content': 'hi'}", expected: ok(file, 'extract_balanced_object', 'jsonrepair') },
  { name: 'prose before a truncated object', tool: writeFile, input: 'Calling now {"path":"a.txt","content":"hi', expected: ok(file, 'strip_leading_prose', 'jsonrepair') },
  { name: 'two objects back to back', tool: writeFile, input: clean + '{"path":"b.txt","content":"no"}', expected: ok(file, 'extract_balanced_object') },
  { name: 'an extra closing brace', tool: writeFile, input: clean + '}', expected: ok(file, 'extract_balanced_object') },
  { name: 'prose only', tool: writeFile, input: 'I cannot do that.', expected: fail(['expected the arguments to be a JSON object, got a string'], 'jsonrepair') },

  // Truncation.
  { name: 'truncated mid-string', tool: writeFile, input: '{"path":"a.txt","content":"hello wor', expected: ok({ ...file, content: 'hello wor' }, 'jsonrepair') },
  { name: 'truncated mid-key (the half key is not a field: stripped)', tool: writeFile, input: '{"path":"a.txt","content":"hi","exec', expected: ok(file, 'jsonrepair') },
  { name: 'truncated after a colon', tool: writeFile, input: '{"path":"a.txt","content":', expected: fail(['- content: expected string, got null null'], 'jsonrepair') },
  { name: 'truncated mid-array', tool: writeFile, input: '{"path":"a.txt","content":"hi","tags":["x","y', expected: ok({ ...file, tags: ['x', 'y'] }, 'jsonrepair') },
  { name: 'truncated in the second array item of a strict tool', tool: todo, input: `{"todos":[${taskJson},{"id":2,"ti`, expected: fail(['- todos[1].ti: unexpected field', '- todos[1].title: required', '- todos[1].status: required, expected one of pending | in_progress | completed'], 'jsonrepair', 'null_to_absent') },
  { name: 'missing closing brace', tool: writeFile, input: '{"path":"a.txt","content":"hi"', expected: ok(file, 'jsonrepair') },

  // Syntax slips jsonrepair fixes.
  { name: 'trailing comma', tool: writeFile, input: '{"path":"a.txt","content":"hi",}', expected: ok(file, 'jsonrepair') },
  { name: 'unquoted keys', tool: writeFile, input: '{path: "a.txt", content: "hi"}', expected: ok(file, 'jsonrepair') },
  { name: 'comments', tool: writeFile, input: '{"path": "a.txt", // the file\n "content": "hi" /* body */}', expected: ok(file, 'jsonrepair') },
  { name: 'raw newline inside a string', tool: writeFile, input: '{"path":"a.txt","content":"line1\nline2"}', expected: ok({ ...file, content: 'line1\nline2' }, 'jsonrepair') },
  { name: 'byte order mark', tool: writeFile, input: '\uFEFF' + clean, expected: ok(file, 'jsonrepair') },

  // Python and JavaScript literals.
  { name: 'Python dict with True', tool: writeFile, input: "{'path': 'a.txt', 'content': 'hi', 'executable': True}", expected: ok({ ...file, executable: true }, 'jsonrepair') },
  { name: 'Python False', tool: writeFile, input: '{"path":"a.txt","content":"hi","executable":False}', expected: ok({ ...file, executable: false }, 'jsonrepair') },
  { name: 'Python None for an optional field of a non-strict tool', tool: writeFile, input: '{"path":"a.txt","content":"hi","executable":None}', expected: fail(['- executable: expected boolean, got null null'], 'jsonrepair') },
  { name: 'JavaScript undefined for an optional field of a strict tool', tool: todo, input: '{"todos":[{"id":1,"title":"write tests","status":"pending","note":undefined}],"merge":undefined}', expected: ok({ todos: [task] }, 'jsonrepair', 'null_to_absent') },

  // Wrong types, missing fields.
  { name: 'number for a string', tool: writeFile, input: '{"path":"a.txt","content":42}', expected: fail(['- content: expected string, got number 42']) },
  { name: 'string for a boolean', tool: writeFile, input: '{"path":"a.txt","content":"hi","executable":"yes"}', expected: fail(['- executable: expected boolean, got string "yes"']) },
  { name: 'value outside an enum', tool: writeFile, input: '{"path":"a.txt","content":"hi","mode":"replace"}', expected: fail(['- mode: expected one of create | append | overwrite, got "replace"']) },
  { name: 'missing required field', tool: writeFile, input: '{"content":"hi"}', expected: fail(['- path: required']) },
  { name: 'nested enum and a missing field', tool: todo, input: '{"todos":[{"id":1,"title":"t","status":"done","note":null}],"merge":null}', expected: fail(['- todos[0].status: expected one of pending | in_progress | completed, got "done"'], 'null_to_absent') },
  { name: 'array root', tool: writeFile, input: `[${clean}]`, expected: fail(['got an array']) },
  { name: 'null root', tool: writeFile, input: 'null', expected: fail(['got null']) },

  // Strict tools: null means absent, extra fields are errors.
  { name: 'strict: null for optional fields reaches the tool as absent', tool: todo, input: `{"todos":[${taskJson}],"merge":null}`, expected: ok({ todos: [task] }, 'null_to_absent') },
  { name: 'strict: null for a required field stays an error', tool: todo, input: '{"todos":null,"merge":null}', expected: fail(['- todos: expected array, got null null'], 'null_to_absent') },
  { name: 'strict: extra top-level field', tool: todo, input: '{"todos":[],"merge":false,"reason":"x"}', expected: fail(['- reason: unexpected field']) },
  { name: 'strict: extra nested field', tool: todo, input: '{"todos":[{"id":1,"title":"t","status":"pending","note":null,"priority":"high"}],"merge":false}', expected: fail(['- todos[0].priority: unexpected field'], 'null_to_absent') },
  { name: 'strict: prototype-named fields are just unexpected', tool: todo, input: '{"todos":[],"constructor":{},"__proto__":{"merge":true}}', expected: fail(['- constructor: unexpected field', '- __proto__: unexpected field']) },
  { name: 'too short a string, with what was sent', tool: writeFile, input: '{"path":"","content":"hi"}', expected: fail(['- path: too small: expected string to have >=1 characters, got ""']) },
  { name: 'non-strict: extra field is stripped', tool: writeFile, input: '{"path":"a.txt","content":"hi","reason":"x"}', expected: ok(file) },

  // Raw JSON Schema (ajv).
  { name: 'raw schema: clean, null kept as sent', tool: rawCounter, input: '{"count":3,"label":null}', expected: ok({ count: 3, label: null }) },
  { name: 'raw schema: minimum enforced', tool: rawCounter, input: '{"count":0,"label":null}', expected: fail(['- count: must be >= 1, got 0']) },
  { name: 'raw schema: extra field and missing field', tool: rawCounter, input: '{"count":3,"extra":1}', expected: fail(['- label: required', '- extra: unexpected field']) },

  // Size and nesting.
  { name: 'over a small size cap', tool: writeFile, input: clean, maxBytes: 16, expected: { ok: false, code: 'arguments_too_large', repairs: [], mentions: ['over the 16-byte limit (31 bytes)'] } },
  { name: 'over the default 1 MiB cap', tool: writeFile, input: `{"path":"a.txt","content":"${'x'.repeat(1024 * 1024)}"}`, expected: { ok: false, code: 'arguments_too_large', repairs: [], mentions: ['over the 1048576-byte limit'] } },
  { name: 'under the cap in characters, over it in UTF-8 bytes', tool: writeFile, input: `{"path":"a.txt","content":"${'é'.repeat(600_000)}"}`, expected: { ok: false, code: 'arguments_too_large', repairs: [], mentions: ['(1200029 bytes)'] } },
  { name: '100k unclosed brackets', tool: writeFile, input: '['.repeat(100_000), expected: fail(['nested deeper than 256 levels']) },
  { name: '100k unclosed braces after a key', tool: writeFile, input: '{"path":' + '{"a":'.repeat(100_000), expected: fail(['nested deeper than 256 levels']) },
  { name: 'valid JSON nested 100k deep', tool: writeFile, input: `{"path":"a.txt","content":"hi","tags":${'['.repeat(100_000)}${']'.repeat(100_000)}}`, expected: fail(['nested too deeply']) },
];

describe('argument corpus', () => {
  it('has at least 40 malformed inputs', () => {
    expect(cases.filter((c) => c.name !== 'clean arguments').length).toBeGreaterThanOrEqual(40);
  });

  it.each(cases)('$name', ({ tool, input, maxBytes, expected }) => {
    const result = validateToolArguments(tool, input, maxBytes === undefined ? undefined : { maxBytes });
    expect(result.repairs).toEqual(expected.repairs);
    if (expected.ok) {
      expect(result).toEqual({ ok: true, value: expected.value, repairs: expected.repairs });
    } else {
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.error.code).toBe(expected.code);
      for (const text of expected.mentions) expect(result.error.message).toContain(text);
      expect(result.error.message.length).toBeLessThanOrEqual(1500);
    }
  });
});
