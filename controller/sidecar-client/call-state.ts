import type { CallEvent, CallHandle, CallResult } from './sidecar-types.js';

/**
 * The client-side state of one call: a buffer of its events that any number of iterators read
 * from the start, ending after the result, and the result's promise (never rejected).
 */
export class CallState implements CallHandle {
  readonly callId: string;
  readonly result: Promise<CallResult>;
  /** The signal that cancels the call, while the owning turn watches it. */
  signal: AbortSignal | undefined;
  /** After a cancel: resolves the call locally if the sidecar does not confirm in time. */
  graceTimer: NodeJS.Timeout | undefined;
  private readonly events: CallEvent[] = [];
  private finished = false;
  private wake: Array<() => void> = [];
  private resolveResult!: (result: CallResult) => void;

  constructor(callId: string) {
    this.callId = callId;
    this.result = new Promise((resolve) => {
      this.resolveResult = resolve;
    });
  }

  /** True once the result arrived. */
  get done(): boolean {
    return this.finished;
  }

  /** Records an activity or presentation event (ignored after the result). */
  push(event: CallEvent): void {
    if (this.finished) return;
    this.events.push(event);
    this.notify();
  }

  /** Records the result, once; later results are ignored. */
  finish(result: CallResult): void {
    if (this.finished) return;
    this.finished = true;
    this.events.push({ type: 'result', callId: this.callId, result });
    this.resolveResult(result);
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = [];
    for (const resolve of wake) resolve();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<CallEvent> {
    let index = 0;
    for (;;) {
      while (index < this.events.length) {
        const event = this.events[index++] as CallEvent;
        yield event;
        if (event.type === 'result') return;
      }
      await new Promise<void>((resolve) => this.wake.push(resolve));
    }
  }
}
