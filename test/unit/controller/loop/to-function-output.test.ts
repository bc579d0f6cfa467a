import { describe, expect, it } from 'vitest';
import { toFunctionOutput } from '../../../../controller/loop/to-function-output.js';

describe('toFunctionOutput', () => {
  it('gives a string for one text part, or for one JSON part, and "" for none', () => {
    expect(toFunctionOutput([{ type: 'text', text: 'hello' }])).toBe('hello');
    expect(toFunctionOutput([{ type: 'json', json: '{"a":1}' }])).toBe('{"a":1}');
    expect(toFunctionOutput([])).toBe('');
  });

  it('gives input parts for several parts, images as data URLs, JSON as text', () => {
    expect(
      toFunctionOutput([
        { type: 'text', text: 'see' },
        { type: 'image', data: new Uint8Array([1, 2, 3]), mimeType: 'image/png' },
        { type: 'json', json: '[1]' },
      ]),
    ).toEqual([
      { type: 'input_text', text: 'see' },
      { type: 'input_image', image_url: 'data:image/png;base64,AQID' },
      { type: 'input_text', text: '[1]' },
    ]);
  });

  it('keeps a single image as a list', () => {
    expect(toFunctionOutput([{ type: 'image', data: new Uint8Array([255]), mimeType: 'image/jpeg' }])).toEqual([
      { type: 'input_image', image_url: 'data:image/jpeg;base64,/w==' },
    ]);
  });
});
