import { describe, expect, it } from 'vitest';
import { isControlPlaneError } from '../../../../../controller/control-plane/domain/control-plane-error.js';
import { openStoreTurnJournal } from '../../../../../controller/control-plane/domain/turns/store-turn-journal.js';
import { postgresBackend, sqliteBackend, useStoreSuite } from '../../../../fixtures/store-backends.js';

const T0 = Date.parse('2026-12-03T08:00:00.000Z');
const big = 'x'.repeat(100_000);

// The turn journal's contract, once per database: what one database does the other does.
for (const backend of [sqliteBackend(), postgresBackend('the turn journal conformance suite')]) {
  describe(`turn journals: ${backend.name}`, backend.suiteOptions, () => {
    const suite = useStoreSuite(backend, () => new Date(T0));

    it('appends records and reads them back in order, after a restart, items resolved', async () => {
      const journal = await openStoreTurnJournal(suite.store.turns, { journalId: 'job:j1', kind: 'job', agentId: 'agent-a', title: 'Tidy up', now: () => T0 });
      expect(journal.records).toEqual([]);
      await journal.append({ kind: 'input', items: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tidy up' }] }] });
      const call = { type: 'function_call', call_id: 'c1', name: 'write_file', arguments: '{"path":"a"}' };
      await journal.append({ kind: 'model_response', id: 'resp_1', output: [call], usage: { input_tokens: 3, output_tokens: 4 } });
      await journal.append({ kind: 'call_intent', callIndex: 0, callId: 'c1', name: 'write_file', rerun: false });
      await journal.append({ kind: 'call_result', callIndex: 0, callId: 'c1', name: 'write_file', output: { type: 'function_call_output', call_id: 'c1', output: 'wrote a' }, label: 'Wrote a', terminateTurn: true, details: { accepted: true } });
      await journal.append({ kind: 'turn_end', status: 'terminated', finalText: 'done', modelCalls: 1 });
      const store = await suite.reopen();
      const again = await openStoreTurnJournal(store.turns, { journalId: 'job:j1', kind: 'job', agentId: 'agent-a', title: 'ignored' });
      expect(again.records).toEqual(journal.records);
      const [header] = await store.turns.list({ kind: 'job', limit: 10 });
      expect(header).toMatchObject({ journalId: 'job:j1', agentId: 'agent-a', title: 'Tidy up', entries: 5, turns: 1, lastStatus: 'terminated' });
    });

    it('stores an item once however often it is referenced: 50 results of the same 100 kB output take about 100 kB', async () => {
      const journal = await openStoreTurnJournal(suite.store.turns, { journalId: 'job:j2', kind: 'job', agentId: 'agent-a', title: 't' });
      for (let index = 0; index < 50; index++) {
        await journal.append({ kind: 'call_result', callIndex: 0, callId: `c${index}`, name: 'read_file', output: { type: 'function_call_output', call_id: 'same', output: big }, label: '', terminateTurn: false });
      }
      const size = await suite.store.turns.size('job:j2');
      expect(size.items).toBe(1);
      expect(size.itemBytes).toBeLessThan(big.length + 200);
      expect(size.entryBytes).toBeLessThan(50 * 300);
    });

    it('keeps every record of calls that settle at once (parallel results), in the order they were appended', async () => {
      const journal = await openStoreTurnJournal(suite.store.turns, { journalId: 'job:par', kind: 'job', agentId: 'agent-a', title: 't' });
      await Promise.all(
        Array.from({ length: 8 }, (_, index) =>
          journal.append({ kind: 'call_result', callIndex: index, callId: `c${index}`, name: 'read_file', output: { type: 'function_call_output', call_id: `c${index}`, output: String(index) }, label: '', terminateTurn: false }),
        ),
      );
      const read = await openStoreTurnJournal(suite.store.turns, { journalId: 'job:par', kind: 'job', agentId: 'agent-a', title: 't' });
      expect(read.records.map((record) => (record.kind === 'call_result' ? record.callId : ''))).toEqual(['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7']);
    });

    it('refuses a second writer that appends at a sequence it did not see, and a foreign id', async () => {
      const first = await openStoreTurnJournal(suite.store.turns, { journalId: 'job:j3', kind: 'job', agentId: 'agent-a', title: 't' });
      const other = await suite.second();
      const second = await openStoreTurnJournal(other.turns, { journalId: 'job:j3', kind: 'job', agentId: 'agent-a', title: 't' });
      await second.append({ kind: 'input', items: [] });
      const lost = await first.append({ kind: 'input', items: [] }).catch((error: unknown) => error);
      expect(isControlPlaneError(lost, 'invalid_request')).toBe(true);
      expect(String(lost)).toMatch(/another runner appended to it/);
      const foreign = await openStoreTurnJournal(suite.store.turns, { journalId: 'job:j3', kind: 'session', agentId: 'agent-b', title: 't' }).catch((error: unknown) => error);
      expect(isControlPlaneError(foreign, 'permission_denied')).toBe(true);
      expect(String(foreign)).toMatch(/is a job of agent "agent-a", not a session of agent "agent-b"/);
    });
  });
}
