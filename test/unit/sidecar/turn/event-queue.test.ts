import { describe, expect, it } from 'vitest';
import { createEventQueue } from '../../../../sidecar/turn/event-queue.js';

describe('createEventQueue', () => {
  it('hands items out in order, in batches or by iteration, and ends after the last one', async () => {
    const queue = createEventQueue<number>();
    queue.push(1);
    queue.push(2);
    expect([queue.take(), queue.take(), queue.take()]).toEqual([1, 2, undefined]);
    const seen: number[] = [];
    const consumed = (async () => {
      for await (const item of queue) seen.push(item);
    })();
    for (let item = 3; item <= 6; item++) queue.push(item);
    queue.end();
    await consumed;
    expect(seen).toEqual([3, 4, 5, 6]);
  });

  it('makes room() wait at the high-water mark until the consumer took it down to half', async () => {
    const queue = createEventQueue<number>({ highWaterMark: 4 });
    for (let item = 0; item < 3; item++) queue.push(item);
    let roomy = false;
    await queue.room();
    queue.push(3);
    const waiting = queue.room().then(() => (roomy = true));
    await Promise.resolve();
    queue.take();
    await Promise.resolve();
    expect(roomy).toBe(false);
    queue.take();
    await waiting;
    expect(roomy).toBe(true);
    expect(queue.length).toBe(2);
  });

  it('resolves a waiting room() when its signal aborts, and readable() rejects with the reason', async () => {
    const queue = createEventQueue<number>({ highWaterMark: 1 });
    queue.push(0);
    const controller = new AbortController();
    const room = queue.room(controller.signal);
    queue.take();
    const idle = new AbortController();
    const readable = queue.readable(idle.signal);
    controller.abort();
    await expect(room).resolves.toBeUndefined();
    idle.abort(new Error('stopped'));
    await expect(readable).rejects.toThrow('stopped');
  });

  it('calls a whenReadable callback once, on the push or end that makes the queue readable, or at once', () => {
    const queue = createEventQueue<number>();
    const calls: string[] = [];
    queue.whenReadable(() => calls.push('first'));
    expect(calls).toEqual([]);
    queue.push(1);
    queue.push(2);
    expect(calls).toEqual(['first']);
    // Already readable: at once.
    queue.whenReadable(() => calls.push('second'));
    expect(calls).toEqual(['first', 'second']);
    expect([queue.take(), queue.take()]).toEqual([1, 2]);
    // Cancelled: never called.
    queue.whenReadable(() => calls.push('cancelled'));
    queue.whenReadable(undefined);
    queue.push(3);
    expect(queue.take()).toBe(3);
    queue.whenReadable(() => calls.push('at the end'));
    queue.end();
    expect(calls).toEqual(['first', 'second', 'at the end']);
  });

  it('reuses its storage across batches and still hands out a long backlog in order', () => {
    const queue = createEventQueue<number>();
    for (let batch = 0; batch < 3; batch++) {
      for (let item = 0; item < 5; item++) queue.push(batch * 10 + item);
      const taken: number[] = [];
      for (let item = queue.take(); item !== undefined; item = queue.take()) taken.push(item);
      expect(taken).toEqual([0, 1, 2, 3, 4].map((item) => batch * 10 + item));
      expect(queue.length).toBe(0);
    }
    // Past the compaction point, taking and pushing interleaved.
    const out: number[] = [];
    for (let item = 0; item < 5_000; item++) queue.push(item);
    for (let step = 0; step < 3_000; step++) out.push(queue.take()!);
    for (let item = 5_000; item < 6_000; item++) queue.push(item);
    for (let item = queue.take(); item !== undefined; item = queue.take()) out.push(item);
    expect(out).toEqual(Array.from({ length: 6_000 }, (_, index) => index));
  });
});
