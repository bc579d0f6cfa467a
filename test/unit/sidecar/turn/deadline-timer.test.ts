import { describe, expect, it } from 'vitest';
import { createDeadlineTimer } from '../../../../sidecar/turn/deadline-timer.js';

const until = (check: () => boolean, signal = AbortSignal.timeout(5_000)) =>
  new Promise<void>((resolve, reject) => {
    const poll = () => (check() ? resolve() : signal.aborted ? reject(new Error('condition not met')) : setTimeout(poll, 2));
    poll();
  });

describe('createDeadlineTimer', () => {
  it('fires deadlines in deadline order whatever the order they were added, and never a cancelled one', async () => {
    const timer = createDeadlineTimer({ now: () => performance.now() });
    const fired: string[] = [];
    timer.add(60, () => fired.push('c'));
    const cancelB = timer.add(40, () => fired.push('b'));
    timer.add(20, () => fired.push('a'));
    timer.add(80, () => fired.push('d'));
    cancelB();
    expect(timer.pending).toBe(3);
    await until(() => fired.length === 3);
    expect(fired).toEqual(['a', 'c', 'd']);
    expect(timer.pending).toBe(0);
  });

  it('re-arms for an earlier deadline added after a later one, and clear() cancels everything', async () => {
    const timer = createDeadlineTimer({ now: () => performance.now() });
    const fired: string[] = [];
    timer.add(10_000, () => fired.push('late'));
    timer.add(5, () => fired.push('early'));
    await until(() => fired.length === 1);
    expect(fired).toEqual(['early']);
    timer.clear();
    expect(timer.pending).toBe(0);
  });

  it('counts a deadline from the clock reading it is given', async () => {
    let clock = 1_050;
    const timer = createDeadlineTimer({ now: () => clock });
    const fired: string[] = [];
    // Read at 1,000 and added once the clock says 1,050: due at 1,060, not 1,110.
    timer.add(60, () => fired.push('from the reading'), 1_000);
    timer.add(60, () => fired.push('from now'));
    clock = 1_060;
    await until(() => fired.length === 1);
    expect(fired).toEqual(['from the reading']);
    expect(timer.pending).toBe(1);
    timer.clear();
  });

  it('keeps many finished deadlines from piling up', () => {
    const timer = createDeadlineTimer({ now: () => performance.now() });
    const cancels = Array.from({ length: 1_000 }, () => timer.add(60_000, () => undefined));
    for (const cancel of cancels.slice(0, 999)) cancel();
    expect(timer.pending).toBe(1);
    cancels[999]!();
    expect(timer.pending).toBe(0);
  });
});
