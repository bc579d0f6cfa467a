import { describe, expect, it } from 'vitest';
import { deniedMessage } from '../../../../sidecar/turn/build-result.js';

// Issue 23 item 10: a denial reason without a final period ran into the next sentence
// ("... an operator denied it Do not retry ...").
describe('deniedMessage', () => {
  it('ends a reason without final punctuation with a period before the next sentence', () => {
    expect(deniedMessage('write_file', 'write notes.md', 'an operator denied it')).toContain('The reason given: an operator denied it. Do not retry');
  });

  it('keeps a reason that already ends a sentence as it is', () => {
    expect(deniedMessage('write_file', 'write notes.md', 'Not now.')).toContain('The reason given: Not now. Do not retry');
    expect(deniedMessage('write_file', 'write notes.md', 'why would you?  ')).toContain('The reason given: why would you? Do not retry');
    expect(deniedMessage('write_file', 'write notes.md', '(see the ticket.)')).toContain('The reason given: (see the ticket.) Do not retry');
  });

  it('says so when no reason was given', () => {
    expect(deniedMessage('write_file', 'write_file', '  ')).toBe(
      'This call of write_file was not approved, so it did not run and nothing was changed. No reason was given. Do not retry the same call unchanged; change the approach, or ask the user what they want instead.',
    );
  });
});
