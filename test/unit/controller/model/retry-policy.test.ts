import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { retryAfterMs, retryDecision, sleepWithSignal } from '../../../../controller/model/retry-policy.js';

const statusError = (status: number, headers: Record<string, string> = {}) =>
  OpenAI.APIError.generate(status, { error: { message: 'no' } }, undefined, new Headers(headers));
const policy = { maxRetries: 2, maxRetryAfterMs: 60_000 };

describe('retry policy', () => {
  it('reads retry-after-ms, retry-after in seconds and as an HTTP date', () => {
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '250' }))).toBe(250);
    expect(retryAfterMs(new Headers({ 'retry-after': '1.5' }))).toBe(1500);
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    expect(retryAfterMs(new Headers({ 'retry-after': inTenSeconds }))).toBeGreaterThan(8_000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'whenever' }))).toBeUndefined();
    expect(retryAfterMs(new Headers())).toBeUndefined();
  });

  it('retries 408, 409, 429, 5xx and lost connections, as many times as allowed; not 400, 401 or 404', () => {
    for (const status of [408, 409, 429, 500, 503]) expect(retryDecision(statusError(status), 0, policy).retry, String(status)).toBe(true);
    expect(retryDecision(new OpenAI.APIConnectionError({ message: 'refused' }), 0, policy).retry).toBe(true);
    for (const status of [400, 401, 404]) expect(retryDecision(statusError(status), 0, policy).retry, String(status)).toBe(false);
    expect(retryDecision(statusError(500), 2, policy).retry).toBe(false);
    expect(retryDecision(statusError(400, { 'x-should-retry': 'true' }), 0, policy).retry).toBe(true);
    expect(retryDecision(statusError(503, { 'x-should-retry': 'false' }), 0, policy).retry).toBe(false);
    expect(retryDecision(new OpenAI.APIUserAbortError(), 0, policy).retry).toBe(false);
  });

  it('waits what the server asks within the cap, backs off without one, and refuses a longer wait with a reason', () => {
    expect(retryDecision(statusError(429, { 'retry-after': '2' }), 0, policy)).toEqual({ retry: true, delayMs: 2000 });
    const backoff = retryDecision(statusError(500), 1, policy);
    expect(backoff.retry && backoff.delayMs).toBeGreaterThanOrEqual(750);
    expect(backoff.retry && backoff.delayMs).toBeLessThanOrEqual(1000);
    expect(retryDecision(statusError(429, { 'retry-after': '600' }), 0, policy)).toEqual({
      retry: false,
      reason: 'the server asked to retry after 600 s, longer than the 60 s this controller waits (--max-retry-after-ms)',
    });
  });

  it('sleeps until its signal aborts, and no longer', async () => {
    const controller = new AbortController();
    const sleeping = sleepWithSignal(600_000, controller.signal);
    controller.abort();
    await expect(sleeping).rejects.toMatchObject({ code: 'aborted' });
    await expect(sleepWithSignal(1, AbortSignal.abort())).rejects.toMatchObject({ code: 'aborted' });
    await expect(sleepWithSignal(1, new AbortController().signal)).resolves.toBeUndefined();
  });
});
