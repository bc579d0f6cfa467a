import type { TurnEvent } from '../loop/turn-events.js';

/** What the console knows of a turn besides its events. */
export interface TurnMeta {
  turnId: string;
  agentId: string;
  /** `text` (npm start), `job`, `schedule`, `workflow-task`. */
  kind: string;
  /** A short description: the prompt's start, the job id, `run/task#attempt`. */
  label: string;
}

/** One event as the console keeps and sends it. */
export interface FeedEvent {
  seq: number;
  /** Its size as JSON (for the feed's bound). */
  chars: number;
  /** Epoch ms. */
  time: number;
  event: TurnEvent;
}

/** A recent or running turn with its events (the oldest dropped past the per-turn bound). */
export interface FeedTurn extends TurnMeta {
  status: 'running' | string;
  startedAt: number;
  finishedAt?: number;
  events: FeedEvent[];
  /** Events dropped from the front to keep the bound. */
  droppedEvents: number;
}

/** What subscribers receive: a turn's event, or "the store may have changed: read the state again". */
export type FeedMessage = { type: 'turn-event'; turn: TurnMeta; status: string } & FeedEvent | { type: 'changed'; what: string };

/** Options of the TurnFeed. */
export interface TurnFeedOptions {
  /** Turns kept (running ones are never dropped; default 50). */
  maxTurns?: number;
  /** Events kept per turn (default 2000). */
  maxEventsPerTurn?: number;
  /** Characters kept of a presentation payload's strings (default 8000). */
  maxPayloadChars?: number;
  /** All turns' events together, as JSON characters (default 8 M): past it the oldest go first. */
  maxTotalChars?: number;
}

/**
 * The console's in-memory ring of recent turns, fed by the same typed turn events the CLI renders
 * (`onEvent` of runTurn). Bounded: at most `maxTurns` turns (finished ones dropped oldest first),
 * `maxEventsPerTurn` events per turn, long payload strings cut, and `maxTotalChars` of events in
 * all (the oldest turns' events dropped first). Subscribers get each event as it is
 * recorded; a throwing subscriber is dropped. Also keeps each agent's latest todo list, from the
 * todo tools' `todo.updated` presentation events.
 */
export class TurnFeed {
  readonly #turns = new Map<string, FeedTurn>();
  readonly #todos = new Map<string, unknown>();
  readonly #subscribers = new Set<(message: FeedMessage) => void>();
  readonly #maxTurns: number;
  readonly #maxEvents: number;
  readonly #maxChars: number;
  readonly #maxTotal: number;
  #total = 0;
  #seq = 0;

  constructor(options: TurnFeedOptions = {}) {
    this.#maxTurns = options.maxTurns ?? 50;
    this.#maxEvents = options.maxEventsPerTurn ?? 2_000;
    this.#maxChars = options.maxPayloadChars ?? 8_000;
    this.#maxTotal = options.maxTotalChars ?? 8_000_000;
  }

  /** An `onEvent` hook that records `meta`'s events, then calls `next` (if any). */
  hook(meta: TurnMeta, next?: (event: TurnEvent) => void): (event: TurnEvent) => void {
    return (event) => {
      this.record(meta, event);
      next?.(event);
    };
  }

  /** Records one event of a turn (starting the turn's entry at its first event). */
  record(meta: TurnMeta, event: TurnEvent): void {
    let turn = this.#turns.get(meta.turnId);
    const now = Date.now();
    if (!turn) {
      turn = { ...meta, status: 'running', startedAt: now, events: [], droppedEvents: 0 };
      this.#turns.set(meta.turnId, turn);
      this.#trim();
    }
    const bounded = this.#bound(event) as TurnEvent;
    const stored: FeedEvent = { seq: ++this.#seq, time: now, chars: JSON.stringify(bounded).length, event: bounded };
    turn.events.push(stored);
    this.#total += stored.chars;
    if (turn.events.length > this.#maxEvents) this.#dropOldest(turn);
    this.#fitTotal(turn);
    if (event.type === 'turn-finished') {
      turn.status = event.status;
      turn.finishedAt = now;
    }
    if (event.type === 'presentation' && event.kind === 'todo.updated') {
      const todos = (event.payload as { todos?: unknown } | undefined)?.todos;
      if (todos !== undefined) this.#todos.set(meta.agentId, this.#bound(todos));
    }
    this.#publish({ type: 'turn-event', turn: { turnId: meta.turnId, agentId: meta.agentId, kind: meta.kind, label: meta.label }, status: turn.status, ...stored });
  }

  /** Tells subscribers to read the state again (an approval appeared, a run moved on). */
  changed(what: string): void {
    this.#publish({ type: 'changed', what });
  }

  /** The turns, newest first. */
  turns(): FeedTurn[] {
    return [...this.#turns.values()].reverse();
  }

  /** Each agent's latest todo list, as the todo tool last presented it. */
  todos(): Record<string, unknown> {
    return Object.fromEntries(this.#todos);
  }

  /** Calls `listener` for every later message; returns the unsubscribe function. */
  subscribe(listener: (message: FeedMessage) => void): () => void {
    this.#subscribers.add(listener);
    return () => this.#subscribers.delete(listener);
  }

  #publish(message: FeedMessage): void {
    for (const listener of this.#subscribers) {
      try {
        listener(message);
      } catch {
        this.#subscribers.delete(listener);
      }
    }
  }

  #dropOldest(turn: FeedTurn): void {
    const dropped = turn.events.shift();
    if (!dropped) return;
    turn.droppedEvents += 1;
    this.#total -= dropped.chars;
  }

  /** Drops the oldest events (other turns' first, `current`'s last) until the total fits. */
  #fitTotal(current: FeedTurn): void {
    for (const turn of [...this.#turns.values(), current]) {
      while (this.#total > this.#maxTotal && turn.events.length > (turn === current ? 1 : 0)) this.#dropOldest(turn);
      if (this.#total <= this.#maxTotal) return;
    }
  }

  #trim(): void {
    if (this.#turns.size <= this.#maxTurns) return;
    for (const [turnId, turn] of this.#turns) {
      if (this.#turns.size <= this.#maxTurns) break;
      if (turn.status !== 'running') {
        this.#turns.delete(turnId);
        for (const event of turn.events) this.#total -= event.chars;
      }
    }
  }

  /** A copy of `value` with long strings cut and deep nesting flattened to text. */
  #bound(value: unknown, depth = 0): unknown {
    if (typeof value === 'string') {
      return value.length > this.#maxChars ? `${value.slice(0, this.#maxChars)}… (${value.length - this.#maxChars} more characters)` : value;
    }
    if (value === null || typeof value !== 'object') return value;
    if (depth > 8) return '…';
    if (Array.isArray(value)) return value.slice(0, 500).map((item) => this.#bound(item, depth + 1));
    return Object.fromEntries(Object.entries(value).slice(0, 200).map(([key, item]) => [key, this.#bound(item, depth + 1)]));
  }
}
