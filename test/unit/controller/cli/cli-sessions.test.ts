import { describe, expect, it } from 'vitest';
import { formatSessions, sessionHistoryEvents, takeSessionFlags } from '../../../../controller/cli/cli-sessions.js';
import type { TurnRecord } from '../../../../controller/loop/turn-journal.js';

describe('npm start session flags', () => {
  it('takes --session and --sessions out of argv, and notes whether --prompt was given', () => {
    expect(takeSessionFlags(['--session', 'fix-tests', '--prompt', 'hi', '--quiet'])).toEqual({ argv: ['--prompt', 'hi', '--quiet'], flags: { session: 'fix-tests', list: false, prompted: true } });
    expect(takeSessionFlags(['--session=a.b_c-1'])).toEqual({ argv: [], flags: { session: 'a.b_c-1', list: false, prompted: false } });
    expect(takeSessionFlags(['--sessions']).flags.list).toBe(true);
  });

  it('refuses a missing or malformed name and --sessions with --session, saying what a name is', () => {
    expect(() => takeSessionFlags(['--session'])).toThrow('--session needs a name, e.g. --session fix-tests');
    expect(() => takeSessionFlags(['--session', '../x'])).toThrow(`--session "../x" is not a session name: use 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit`);
    expect(() => takeSessionFlags(['--session', 'x'.repeat(101)])).toThrow('is not a session name');
    expect(() => takeSessionFlags(['--sessions', '--session', 'a'])).toThrow('--sessions lists the sessions: give it without --session');
  });

  it('lists sessions as a table, an interrupted one with how to resume it', () => {
    const text = formatSessions([
      { journalId: 'session:demo', kind: 'session', agentId: 'cli-agent', title: 'first\nquestion', entries: 9, turns: 2, lastStatus: 'running', createdAt: 0, updatedAt: Date.parse('2026-12-03T09:00:00Z') },
    ]);
    expect(text.split('\n')[1]).toBe('demo     cli-agent  2      interrupted (resume: --session NAME)  2026-12-03 09:00:00  first question');
    expect(formatSessions([])).toContain('No sessions yet');
  });

  it("turns a session's ended turns into the console's events, one turn each", () => {
    const records: TurnRecord[] = [
      { kind: 'input', items: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'list it' }] }] },
      { kind: 'model_response', id: 'r1', output: [{ type: 'function_call', call_id: 'c1', name: 'list_files', arguments: '{}' }] },
      { kind: 'call_intent', callIndex: 0, callId: 'c1', name: 'list_files', rerun: true },
      { kind: 'call_result', callIndex: 0, callId: 'c1', name: 'list_files', output: { type: 'function_call_output', call_id: 'c1', output: 'a.txt' }, label: 'Listed .', terminateTurn: false },
      { kind: 'model_response', id: 'r2', output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'One file.' }] }] },
      { kind: 'turn_end', status: 'completed', finalText: 'One file.', modelCalls: 2 },
      { kind: 'input', items: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'open turn' }] }] },
    ];
    const turns = sessionHistoryEvents('demo', records);
    expect(turns).toHaveLength(1);
    expect(turns[0]!.prompt).toBe('list it');
    expect(turns[0]!.events.map((event) => event.type)).toEqual(['turn-started', 'model-response', 'activity-completed', 'model-response', 'turn-finished']);
    expect(turns[0]!.events[2]).toMatchObject({ name: 'list_files', label: 'Listed .', output: 'a.txt' });
  });
});
