import { Cron } from 'croner';
import { ControlPlaneError } from '../control-plane-error.js';

/** When a schedule fires: a cron expression read in an IANA time zone, or one instant. */
export type ScheduleTiming =
  | { kind: 'cron'; cron: string; timeZone: string }
  | { kind: 'at'; at: string; timeZone: string; atMs: number };

/** The most firings counted when a schedule was down for a long time (the count is capped there). */
export const MAX_COUNTED_FIRINGS = 100_000;

/**
 * Checks a schedule's timing as `schedule_create` gives it: exactly one of a cron expression (5 or
 * 6 fields, parsed by croner) and a one-off ISO 8601 time (with an offset, or a local time read in
 * `timeZone`), and an IANA time zone (default "UTC"). A one-off time must not be in the past.
 *
 * @throws ControlPlaneError `invalid_request` with a message the model can act on.
 */
export function parseScheduleTiming(input: { cron?: string; at?: string; timeZone?: string }, now: number): ScheduleTiming {
  const cron = input.cron?.trim() ?? '';
  const at = input.at?.trim() ?? '';
  const timeZone = input.timeZone?.trim() || 'UTC';
  if (!isTimeZone(timeZone)) {
    throw new ControlPlaneError('invalid_request', `"${timeZone}" is not an IANA time zone: use a name such as "UTC", "Europe/Paris" or "America/New_York"`);
  }
  if ((cron === '') === (at === '')) {
    throw new ControlPlaneError('invalid_request', 'give exactly one of `cron` (a cron expression, e.g. "0 9 * * 1-5") and `at` (a one-off ISO time, e.g. "2026-12-01T09:00:00Z")');
  }
  if (cron !== '') {
    if (cron.length > 200) throw new ControlPlaneError('invalid_request', 'the cron expression is longer than 200 characters');
    let next: Date | null;
    try {
      next = new Cron(cron, { timezone: timeZone, paused: true, mode: '5-or-6-parts' }).nextRun(new Date(now));
    } catch (error) {
      throw new ControlPlaneError('invalid_request', `"${cron}" is not a cron expression: ${(error as Error).message}. Use 5 fields (minute hour day month weekday) or 6 (with seconds first)`);
    }
    if (!next) throw new ControlPlaneError('invalid_request', `the cron expression "${cron}" never fires`);
    return { kind: 'cron', cron, timeZone };
  }
  if (at.length > 64 || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(at)) {
    throw new ControlPlaneError('invalid_request', `"${at}" is not an ISO 8601 time: use e.g. "2026-12-01T09:00:00Z", or a local time such as "2026-12-01T09:00:00" read in time_zone`);
  }
  let atMs: number | undefined;
  if (/(Z|[+-]\d{2}:?\d{2})$/i.test(at)) {
    atMs = Date.parse(at);
  } else {
    // A local time, read in `timeZone` by croner (to the second; the fraction is added back).
    try {
      atMs = new Cron(at, { timezone: timeZone, paused: true }).nextRun(new Date(0))?.getTime();
    } catch (error) {
      throw new ControlPlaneError('invalid_request', `"${at}" is not a valid ISO 8601 time: ${(error as Error).message}`);
    }
    const fraction = /:\d{2}\.(\d{1,3})/.exec(at)?.[1];
    if (atMs !== undefined && fraction) atMs += Number(fraction.padEnd(3, '0'));
  }
  if (atMs === undefined || Number.isNaN(atMs)) throw new ControlPlaneError('invalid_request', `"${at}" is not a valid ISO 8601 time`);
  if (atMs < now - 1_000) {
    throw new ControlPlaneError('invalid_request', `${new Date(atMs).toISOString()} is in the past (now is ${new Date(now).toISOString()}): give a future time`);
  }
  return { kind: 'at', at, timeZone, atMs };
}

/** The first firing strictly after `after` (ms), or undefined when none is left. */
export function nextFireAfter(timing: ScheduleTiming, after: number): number | undefined {
  if (timing.kind === 'at') return timing.atMs > after ? timing.atMs : undefined;
  return new Cron(timing.cron, { timezone: timing.timeZone, paused: true, mode: '5-or-6-parts' }).nextRun(new Date(after))?.getTime();
}

/**
 * For a schedule whose firing at `dueAt` is due at `now`: how many later firings also fell due by
 * `now` (missed: only one firing runs for all of them), and the next firing after `now`.
 */
export function catchUp(timing: ScheduleTiming, dueAt: number, now: number): { missed: number; nextFireAt: number | undefined } {
  if (timing.kind === 'at') return { missed: 0, nextFireAt: undefined };
  const cron = new Cron(timing.cron, { timezone: timing.timeZone, paused: true, mode: '5-or-6-parts' });
  let missed = 0;
  let cursor = dueAt;
  for (;;) {
    const next = cron.nextRun(new Date(cursor))?.getTime();
    if (next === undefined) return { missed, nextFireAt: undefined };
    if (next > now) return { missed, nextFireAt: next };
    missed += 1;
    cursor = next;
    if (missed >= MAX_COUNTED_FIRINGS) {
      return { missed, nextFireAt: cron.nextRun(new Date(now))?.getTime() };
    }
  }
}

/** True when `name` is a time zone this runtime knows (IANA names, "UTC"). */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
