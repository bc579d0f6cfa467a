import { describe, expect, it } from 'vitest';
import { createSandboxProber, type SandboxProbe } from '../../../../../../sidecar/categories/computer/sandbox/sandbox-probe.js';

describe('createSandboxProber', () => {
  it('answers a failure with when it retries, probes again once the backoff passed, and keeps a success', async () => {
    let clock = 0;
    const answers: SandboxProbe[] = [
      { ok: false, cause: 'timed out', fix: 'wait' },
      { ok: false, cause: 'timed out', fix: 'wait' },
      { ok: true, bwrap: '/usr/bin/bwrap' },
    ];
    let runs = 0;
    const heard: SandboxProbe[] = [];
    const prober = createSandboxProber({ run: async () => answers[runs++]!, baseDelayMs: 1_000, maxDelayMs: 60_000, now: () => clock });
    prober.onChange((probe) => heard.push(probe));
    expect(await prober.probe()).toMatchObject({ ok: false, retryInMs: 1_000 });
    clock = 400;
    // Before the backoff: the same failure, no new probe.
    expect(await prober.probe()).toMatchObject({ ok: false, retryInMs: 600 });
    expect(runs).toBe(1);
    clock = 1_000;
    // The backoff doubles after each failure.
    expect(await prober.probe()).toMatchObject({ ok: false, retryInMs: 2_000 });
    expect(runs).toBe(2);
    clock = 3_000;
    expect(await prober.probe()).toEqual({ ok: true, bwrap: '/usr/bin/bwrap' });
    clock = 100_000;
    expect(await prober.probe()).toEqual({ ok: true, bwrap: '/usr/bin/bwrap' });
    expect(runs).toBe(3);
    expect(heard.map((probe) => probe.ok)).toEqual([false, false, true]);
  });

  it('caps the backoff', async () => {
    let clock = 0;
    const prober = createSandboxProber({ run: async () => ({ ok: false, cause: 'c', fix: 'f' }), baseDelayMs: 1_000, maxDelayMs: 4_000, now: () => clock });
    const delays: Array<number | undefined> = [];
    for (let i = 0; i < 5; i++) {
      const answer = await prober.probe();
      delays.push(answer.ok ? undefined : answer.retryInMs);
      clock += 100_000;
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 4_000, 4_000]);
  });
});
