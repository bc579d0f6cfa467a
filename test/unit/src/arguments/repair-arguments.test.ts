import { describe, expect, it } from 'vitest';
import { repairArguments } from '../../../../src/index.js';
import { extractCodeFence, findBalancedEnd } from '../../../../src/arguments/repair-arguments.js';

describe('repairArguments', () => {
  it('parses clean JSON with no repair', () => {
    expect(repairArguments('{"a":[1,{"b":null}]}')).toEqual({ ok: true, value: { a: [1, { b: null }] }, repairs: [] });
  });

  it('walks the ladder in order and names each step', () => {
    expect(repairArguments(JSON.stringify('Sure:\n```json\n{"a":1,}\n```'))).toEqual({
      ok: false,
      message: 'expected the arguments to be a JSON object, got a string ("Sure:\\n```json\\n{\\"a\\":1,}\\n```")',
      repairs: [],
    });
    expect(repairArguments(JSON.stringify('```json\n{"a":1,}\n```'))).toEqual({
      ok: true,
      value: { a: 1 },
      repairs: ['unwrap_double_encoded', 'extract_code_fence', 'jsonrepair'],
    });
  });

  it('refuses what jsonrepair turns into something other than an object', () => {
    expect(repairArguments('[1, 2')).toEqual({ ok: false, message: 'expected the arguments to be a JSON object, got an array', repairs: ['jsonrepair'] });
  });
});

describe('extractCodeFence', () => {
  it.each([
    ['```json\n{"a":1}\n```', '{"a":1}'],
    ['```\n{"a":1}\n```', '{"a":1}'],
    ['text ```JSON5 \n{"a":1}``` more', '{"a":1}'],
    ['````\n{"a":1}\n````', '{"a":1}'],
    ['```{"a":1}```', '{"a":1}'],
    ['```json\n{"a":', '{"a":'],
  ])('%j yields %j', (text, block) => {
    expect(extractCodeFence(text)).toBe(block);
  });

  it('returns undefined without a fence', () => {
    expect(extractCodeFence('{"a":"`"}')).toBeUndefined();
  });
});

describe('findBalancedEnd', () => {
  it('skips brackets and escaped quotes inside strings', () => {
    const text = 'x {"a":"}\\"{","b":[{}]} y';
    expect(findBalancedEnd(text, 2)).toBe(text.lastIndexOf('}'));
  });

  it('returns -1 for an unclosed or mismatched object', () => {
    expect(findBalancedEnd('{"a":[1}', 0)).toBe(-1);
    expect(findBalancedEnd('{"a":1', 0)).toBe(-1);
  });
});
