import type { PresentationEvent, ToolExecutionContext } from '../../src/index.js';

/** What a call's context reads from the call it belongs to (execute-call.ts's run). */
export interface CallContextSource {
  readonly options: { readonly callId: string; readonly now: () => number };
  /** When the call's deadline passes, on the `now` clock. */
  readonly deadlineAt: number;
  /** The call's signal, created on first use. */
  signal(): AbortSignal;
  /** Sends a presentation event (see ToolExecutionContext.emit). */
  emit(event: PresentationEvent): Promise<void>;
}

/**
 * What the tool's `execute` gets. A class, not an object literal with a `get signal()`: V8 gives
 * every such literal a hidden class (map) of its own, and those maps, kept in the old generation,
 * held each finished call alive through young-generation GCs until a full GC (about 1 KB promoted
 * per call; most of the in-process call path's time went to GC). Its members are getters on the
 * prototype: the signal and the `emit` and `remainingMs` functions are made on first use (most
 * quick tools read none of them), and those functions are bound, so a tool may pass them around.
 */
export class CallContext implements ToolExecutionContext {
  readonly callId: string;
  private boundEmit: ((event: PresentationEvent) => Promise<void>) | undefined;
  private boundRemainingMs: (() => number) | undefined;

  constructor(private readonly run: CallContextSource) {
    this.callId = run.options.callId;
  }

  get signal(): AbortSignal {
    return this.run.signal();
  }

  get emit(): (event: PresentationEvent) => Promise<void> {
    const { run } = this;
    return (this.boundEmit ??= (event) => run.emit(event));
  }

  get remainingMs(): () => number {
    const { deadlineAt, options } = this.run;
    return (this.boundRemainingMs ??= () => deadlineAt - options.now());
  }
}
