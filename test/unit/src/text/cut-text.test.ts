import { describe, expect, it } from 'vitest';
import { headOf, tailOf, truncateMiddle } from '../../../../src/index.js';

// A lone surrogate: a high one not followed by a low one, or a low one not preceded by a high one.
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe('cutting text by whole characters', () => {
  const text = 'ab😀cd😀😀ef';

  it('never leaves half a pair at a head or a tail, at any length', () => {
    for (let length = 0; length <= text.length; length++) {
      const head = headOf(text, length);
      const tail = tailOf(text, length);
      expect(head, `head ${length}`).not.toMatch(LONE);
      expect(tail, `tail ${length}`).not.toMatch(LONE);
      expect(head.length).toBeLessThanOrEqual(length);
      expect(length - head.length).toBeLessThanOrEqual(1);
      expect(text.startsWith(head) && text.endsWith(tail)).toBe(true);
    }
  });

  it('truncateMiddle keeps whole characters at both cuts and counts what it cut', () => {
    const long = '😀'.repeat(200);
    for (let max = 64; max < 130; max++) {
      const cut = truncateMiddle(long, max);
      expect(cut.text, `max ${max}`).not.toMatch(LONE);
      expect(cut.text.length).toBeLessThanOrEqual(max);
      expect(cut.text).toContain(`[… ${cut.cutChars} characters cut …]`);
    }
  });
});
