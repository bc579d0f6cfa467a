import { sql, type Kysely } from 'kysely';
import { errorMessage, type Logger } from '../../../../src/index.js';
import type { StoreHealth } from '../../domain/control-plane-store.js';
import type { StoreDatabase } from '../store-schema.js';

/** Options of `PostgresHealth`. */
export interface PostgresHealthOptions {
  db: Kysely<StoreDatabase>;
  /** The database's redacted URL, for the log lines. */
  location: string;
  logger: Logger;
  /** How often the database is probed (default 5 s). */
  intervalMs?: number;
  /** How long one probe may take before the database counts as lost (default 5 s). */
  probeTimeoutMs?: number;
}

/**
 * The PostgreSQL store's view of its database: connection errors that pg's pool reports
 * as events (an idle connection dropped, maintenance failing) become structured log lines instead of
 * vanishing, and a probe (`SELECT 1`, every few seconds and at once after such an error) tells the
 * health watchers when the database is lost and when it answers again. Without the probe a
 * controller with no idle connection would not notice a lost database until its next claim failed.
 */
export class PostgresHealth {
  readonly #options: PostgresHealthOptions;
  readonly #listeners = new Set<(health: StoreHealth) => void>();
  readonly #timer: NodeJS.Timeout;
  #health: StoreHealth = { ok: true };
  #probing: Promise<void> | undefined;
  #closed = false;

  constructor(options: PostgresHealthOptions) {
    this.#options = options;
    this.#timer = setInterval(() => void this.probe(), options.intervalMs ?? 5_000);
    // The probe must not keep a process alive that has nothing else to do.
    this.#timer.unref();
  }

  /** Logs an `error` event of pg's pool (`source` says which), then probes the database. */
  reportError(source: 'pool', error: unknown): void {
    if (this.#closed) return;
    const code = (error as { code?: unknown } | undefined)?.code;
    this.#options.logger.error('PostgreSQL connection error', { source, store: this.#options.location, error: errorMessage(error), ...(typeof code === 'string' ? { code } : {}) });
    void this.probe();
  }

  /** Probes the database now (one probe at a time) and tells the watchers when its health changed. */
  probe(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#probing ??= this.#probeOnce().finally(() => (this.#probing = undefined));
    return this.#probing;
  }

  /** Calls `listener` with the current health now and at each change; returns the unsubscribe. */
  watch(listener: (health: StoreHealth) => void): () => void {
    this.#listeners.add(listener);
    listener(this.#health);
    return () => this.#listeners.delete(listener);
  }

  /** Stops probing and forgets the watchers. Idempotent. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#listeners.clear();
  }

  async #probeOnce(): Promise<void> {
    let next: StoreHealth = { ok: true };
    // Twice before the database counts as lost: right after a connection error the first probe may
    // get a pooled connection that was cut but not yet dropped from the pool.
    for (let tries = 0; tries < 2; tries++) {
      const error = await this.#select1();
      if (error === undefined) {
        next = { ok: true };
        break;
      }
      next = { ok: false, reason: `the PostgreSQL database ${this.#options.location} is unreachable: ${errorMessage(error)}` };
    }
    if (this.#closed || next.ok === this.#health.ok) return;
    this.#health = next;
    if (next.ok) this.#options.logger.info('PostgreSQL database reachable again', { store: this.#options.location });
    else this.#options.logger.error('PostgreSQL database lost', { store: this.#options.location, error: next.reason });
    for (const listener of this.#listeners) listener(next);
  }

  /** `SELECT 1` within the probe timeout: undefined when it answered, else why not. */
  async #select1(): Promise<unknown> {
    const timeoutMs = this.#options.probeTimeoutMs ?? 5_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        sql`SELECT 1`.execute(this.#options.db),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs))),
      ]);
      return undefined;
    } catch (error) {
      return error ?? new Error('the probe failed');
    } finally {
      clearTimeout(timer);
    }
  }
}
