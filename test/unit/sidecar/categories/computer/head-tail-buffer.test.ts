import { describe, expect, it } from 'vitest';
import { HeadTailBuffer } from '../../../../../sidecar/categories/computer/head-tail-buffer.js';

const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe('HeadTailBuffer', () => {
  it('keeps head and tail within the limit and counts what it cut', () => {
    const buffer = new HeadTailBuffer(10);
    for (const piece of ['abc', 'defgh', 'ijklmnop', 'qrstuvwxyz']) buffer.append(piece);
    expect(buffer.toString()).toBe('abcde\n[… 16 characters cut …]\nvwxyz');
    expect(buffer.droppedChars).toBe(16);
    expect(buffer.length).toBe(10);
  });

  it('never cuts a surrogate pair in two, at the head or at the tail, whatever the pieces', () => {
    for (let limit = 4; limit < 14; limit++) {
      for (let split = 1; split < 7; split++) {
        const text = 'a😀b😀😀c😀d😀e😀😀f';
        const buffer = new HeadTailBuffer(limit);
        for (let index = 0; index < text.length; index += split) buffer.append(text.slice(index, index + split));
        const kept = buffer.toString();
        expect(kept, `limit ${limit}, pieces of ${split}`).not.toMatch(lone);
        expect(buffer.length).toBeLessThanOrEqual(limit);
        expect(buffer.length + buffer.droppedChars).toBe(text.length);
      }
    }
  });
});
