import { z } from 'zod';
import { defineWorkerTool, textResult, type WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';
import { callControl } from './control/call-control.js';
import { formatSchedule } from './control/format-control.js';

/** Longest prompt a schedule, job or workflow task may carry, in characters. */
export const MAX_PROMPT_CHARS = 8_000;
const id = (what: string) => z.string().min(1).max(200).describe(`The ${what} id, as a list or create call returned it.`);

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const createSchema = z
  .object({
    prompt: z.string().min(1).max(MAX_PROMPT_CHARS).describe('The message of the text turn each firing starts, written as instructions to yourself.'),
    cron: z.string().min(1).max(200).optional().describe('A cron expression ("0 9 * * 1-5": 09:00 on weekdays) for a repeating schedule. Give exactly one of cron and at.'),
    at: z.iso.datetime({ offset: true }).optional().describe('A one-off time in ISO 8601 ("2026-12-01T09:00:00Z"). Give exactly one of cron and at.'),
    time_zone: z
      .string()
      .min(1)
      .max(64)
      .refine(isTimeZone, { message: 'not an IANA time zone name (for example "Europe/Paris" or "UTC")' })
      .optional()
      .describe('The IANA time zone the cron expression is read in (default "UTC").'),
  })
  .refine((value) => (value.cron === undefined) !== (value.at === undefined), { message: 'give exactly one of cron (repeating) and at (one-off)' });

/**
 * The schedule tools (`schedule_create`, `schedule_list`, `schedule_delete`): each sends its
 * operation to the control plane over the turn's own stream. Absent (`[]`) when the turn's client
 * does not answer control requests.
 */
export function createScheduleTools(context: CategoryContext): WorkerAgentTool[] {
  const channel = context.control;
  if (!channel || context.turn.kind !== 'text') return [];
  return [
    defineWorkerTool({
      name: 'schedule_create',
      description:
        'Schedules a future text turn of yours: give the prompt it starts with, and either a cron expression (repeating, read in time_zone) or a one-off ISO time in at. Returns the schedule id and its next firing.',
      schema: createSchema,
      describeActivity: ({ cron, at }) => (cron ? `Scheduling "${cron}"` : `Scheduling a turn at ${at}`),
      async execute(params, { callId, signal }) {
        const { schedule } = await callControl({
          channel,
          callId,
          signal,
          expect: 'createSchedule',
          request: {
            $case: 'createSchedule',
            value: { agentId: '', prompt: params.prompt, cron: params.cron ?? '', at: params.at ?? '', timeZone: params.time_zone ?? 'UTC' },
          },
        });
        if (!schedule) return textResult('The control plane created the schedule but sent nothing back; list the schedules to see it.');
        return textResult(`Created ${formatSchedule(schedule)}`, { details: { schedule } });
      },
    }),
    defineWorkerTool({
      name: 'schedule_list',
      description: 'Lists your schedules: ids, cron or time, next firing, how often each fired and missed firings.',
      schema: z.object({}),
      executionMode: 'parallel',
      isReadOnly: true,
      describeActivity: () => 'Listing schedules',
      async execute(_params, { callId, signal }) {
        const { schedules } = await callControl({ channel, callId, signal, expect: 'listSchedules', request: { $case: 'listSchedules', value: { agentId: '' } } });
        if (schedules.length === 0) return textResult('You have no schedules.');
        return textResult(`${schedules.length} schedule${schedules.length === 1 ? '' : 's'}:\n${schedules.map(formatSchedule).join('\n')}`, { details: { count: schedules.length } });
      },
    }),
    defineWorkerTool({
      name: 'schedule_delete',
      description: 'Deletes one of your schedules by id: it will not fire again. A turn it already started is not stopped.',
      schema: z.object({ schedule_id: id('schedule') }),
      isDestructive: true,
      describeActivity: ({ schedule_id }) => `Deleting schedule ${schedule_id}`,
      async execute({ schedule_id }, { callId, signal }) {
        const { schedule } = await callControl({
          channel,
          callId,
          signal,
          expect: 'deleteSchedule',
          request: { $case: 'deleteSchedule', value: { agentId: '', scheduleId: schedule_id } },
        });
        return textResult(schedule ? `Deleted ${formatSchedule(schedule)}` : `Deleted schedule ${schedule_id}.`);
      },
    }),
  ];
}
