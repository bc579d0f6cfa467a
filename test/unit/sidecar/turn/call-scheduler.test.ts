import { describe, expect, it } from 'vitest';
import { createCallScheduler, type CallTicket } from '../../../../sidecar/turn/call-scheduler.js';

// No clocks: the tests look at which tickets are granted after each step (promises settle in
// microtasks, so `flush` lets them run).
const flush = () => new Promise((resolve) => setImmediate(resolve));
const never = new AbortController().signal;

function track(ticket: CallTicket, log: string[], name: string) {
  void ticket.ready(never).then(() => log.push(name), () => log.push(`${name}:rejected`));
  return ticket;
}

describe('createCallScheduler', () => {
  it('grants parallel calls together', async () => {
    const scheduler = createCallScheduler();
    const log: string[] = [];
    const a = track(scheduler.enter('parallel'), log, 'a');
    const b = track(scheduler.enter('parallel'), log, 'b');
    await flush();
    expect(log).toEqual(['a', 'b']);
    expect(a.granted && b.granted).toBe(true);
  });

  it('makes a sequential call wait for every earlier call and hold back every later one', async () => {
    const scheduler = createCallScheduler();
    const log: string[] = [];
    const p1 = track(scheduler.enter('parallel'), log, 'p1');
    const p2 = track(scheduler.enter('parallel'), log, 'p2');
    const s = track(scheduler.enter('sequential'), log, 's');
    const p3 = track(scheduler.enter('parallel'), log, 'p3');
    await flush();
    expect(log).toEqual(['p1', 'p2']);
    p2.release();
    await flush();
    expect(log).toEqual(['p1', 'p2']);
    expect(s.granted).toBe(false);
    p1.release();
    await flush();
    expect(log).toEqual(['p1', 'p2', 's']);
    expect(p3.granted).toBe(false);
    s.release();
    await flush();
    expect(log).toEqual(['p1', 'p2', 's', 'p3']);
    expect(scheduler.size).toBe(1);
  });

  it('runs two sequential calls one after the other, in entry order', async () => {
    const scheduler = createCallScheduler();
    const log: string[] = [];
    const s1 = track(scheduler.enter('sequential'), log, 's1');
    track(scheduler.enter('sequential'), log, 's2');
    await flush();
    expect(log).toEqual(['s1']);
    s1.release();
    await flush();
    expect(log).toEqual(['s1', 's2']);
  });

  it('takes a waiting call out of the line when its signal aborts, letting later calls go', async () => {
    const scheduler = createCallScheduler();
    const log: string[] = [];
    const p1 = track(scheduler.enter('parallel'), log, 'p1');
    const controller = new AbortController();
    const s = scheduler.enter('sequential');
    const waiting = s.ready(controller.signal);
    track(scheduler.enter('parallel'), log, 'p2');
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    await flush();
    expect(log).toEqual(['p1', 'p2']);
    p1.release();
    expect(scheduler.size).toBe(1);
  });

  it('treats release as idempotent', async () => {
    const scheduler = createCallScheduler();
    const log: string[] = [];
    const s1 = track(scheduler.enter('sequential'), log, 's1');
    const s2 = track(scheduler.enter('sequential'), log, 's2');
    track(scheduler.enter('sequential'), log, 's3');
    s1.release();
    s1.release();
    await flush();
    expect(log).toEqual(['s1', 's2']);
    s2.release();
    await flush();
    expect(log).toEqual(['s1', 's2', 's3']);
  });
});
