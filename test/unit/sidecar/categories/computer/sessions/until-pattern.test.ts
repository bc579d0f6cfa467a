import { describe, expect, it } from 'vitest';
import { parseUntil } from '../../../../../../sidecar/categories/computer/sessions/until-pattern.js';

describe('parseUntil', () => {
  it('matches a literal split across two pieces of output', () => {
    const matcher = parseUntil('>>> ');
    expect(matcher.feed('2222\r\n>>')).toBe(false);
    expect(matcher.feed('> ')).toBe(true);
  });

  it('matches a one-character literal only where it appears', () => {
    const matcher = parseUntil('$');
    expect(matcher.feed('no prompt yet')).toBe(false);
    expect(matcher.feed('user@host:~$')).toBe(true);
  });

  it('treats /pattern/flags as a regular expression, across pieces, and anything else literally', () => {
    const regex = parseUntil('/listening on port \\d+/i');
    expect(regex.feed('Server LISTENING on po')).toBe(false);
    expect(regex.feed('rt 3000\n')).toBe(true);
    expect(parseUntil('/usr/bin').feed('/usr/bin')).toBe(true);
    expect(parseUntil('a.c').feed('abc')).toBe(false);
  });

  it('refuses nested quantifiers, back-references, a broken pattern, and an empty or long until', () => {
    for (const bad of ['/(a+)+$/', '/(x*y?)*/', '/(?:ab+)*/', '/((a|b)+)+/', '/(a)\\1/', '/(unclosed/', '', 'x'.repeat(201)]) {
      expect(() => parseUntil(bad), bad).toThrow(expect.objectContaining({ code: 'invalid_arguments' }));
    }
  });

  it('accepts a group that repeats without repeating inside, or repeats inside without being repeated', () => {
    for (const good of ['/(ab)+c/', '/(a+b)c/', '/(foo|bar)?baz/', '/[(a+)]+/', '/\\(a+\\)+/']) expect(() => parseUntil(good), good).not.toThrow();
  });
});
