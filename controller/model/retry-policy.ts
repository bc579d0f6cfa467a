/**
 * When to send a model request again, and after how long. The controller retries itself rather
 * than through the SDK: the SDK's wait ignores the abort signal and honours any `retry-after`,
 * however long (Ctrl-C during `retry-after: 600` waited the ten minutes out).
 */
import OpenAI from 'openai';
import { ToolRuntimeError } from '../../src/index.js';

/** Options of `retryDecision`. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** The longest `retry-after` honoured, in ms; a server asking for more ends the request. */
  maxRetryAfterMs: number;
}

/** What to do after a failed attempt. */
export type RetryDecision =
  | { retry: true; delayMs: number }
  | { retry: false; /** Set when the server asked for a longer wait than the cap. */ reason?: string };

/** The server's requested wait in ms (`retry-after-ms`, `retry-after` seconds or HTTP date), if any. */
export function retryAfterMs(headers: Headers | undefined): number | undefined {
  const millis = headers?.get('retry-after-ms');
  if (millis) {
    const value = Number.parseFloat(millis);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headers?.get('retry-after');
  if (!after) return undefined;
  const seconds = Number.parseFloat(after);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The SDK's rule: a server's `x-should-retry` decides; else 408, 409, 429 and 5xx; connection errors. */
function retryable(error: unknown): boolean {
  if (error instanceof OpenAI.APIUserAbortError) return false;
  if (error instanceof OpenAI.APIConnectionError) return true;
  if (!(error instanceof OpenAI.APIError)) return false;
  const should = error.headers?.get('x-should-retry');
  if (should === 'true') return true;
  if (should === 'false') return false;
  const status = error.status ?? 0;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * Decides whether attempt `attempt` (0 for the first) may be retried after `error`, and when:
 * the server's `retry-after` when it gives one and it is within the cap, else exponential backoff
 * (0.5 s doubling, at most 8 s, up to a quarter less for jitter), as the SDK does.
 */
export function retryDecision(error: unknown, attempt: number, policy: RetryPolicy): RetryDecision {
  if (attempt >= policy.maxRetries || !retryable(error)) return { retry: false };
  const requested = error instanceof OpenAI.APIError ? retryAfterMs(error.headers) : undefined;
  if (requested !== undefined) {
    if (requested <= policy.maxRetryAfterMs) return { retry: true, delayMs: requested };
    const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
    return {
      retry: false,
      reason:
        `the server asked to retry after ${seconds(requested)}, longer than the ${seconds(policy.maxRetryAfterMs)} ` +
        'this controller waits (--max-retry-after-ms)',
    };
  }
  const backoff = Math.min(0.5 * 2 ** attempt, 8) * 1000;
  return { retry: true, delayMs: backoff * (1 - Math.random() * 0.25) };
}

/**
 * Waits `ms`, or less when `signal` aborts.
 *
 * @throws ToolRuntimeError `aborted` as soon as `signal` aborts (also when it already has).
 */
export function sleepWithSignal(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ToolRuntimeError('aborted', 'the model request was aborted while waiting to retry', { cause: signal.reason }));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}
