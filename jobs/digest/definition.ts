import { z } from 'zod';
import { defineJob, type ScheduleWindow } from '../../job-api/workflow.js';

const DAY = 24 * 3_600_000;

/** What a digest job stores as its input: the window it was started for, and the period it reports on. */
export interface DigestInput {
  windowStart: string;
  windowEnd: string;
  periodStart: string;
  periodEnd: string;
}

/** The digest that runs for a window reports on the window before it, which has ended. */
function digestInput(window: ScheduleWindow): DigestInput {
  const len = Date.parse(window.end) - Date.parse(window.start);
  return {
    windowStart: window.start,
    windowEnd: window.end,
    periodStart: new Date(Date.parse(window.start) - len).toISOString(),
    periodEnd: window.start,
  };
}

export const digest = defineJob({
  name: 'digest',
  workflowType: 'digestJob',
  description: 'scheduled: one per tenant and window, a digest of the previous window sent as one notification',
  input: z
    .object({ windowStart: z.iso.datetime(), windowEnd: z.iso.datetime(), periodStart: z.iso.datetime(), periodEnd: z.iso.datetime() })
    .strict()
    .describe('scheduled only: started by its Temporal Schedule, one job per tenant and window; POST /v1/jobs refuses it'),
  effects: ['digest'],
  // Scheduled only: one job per tenant and window, started by its Schedule (or the scan).
  // Submitting one over HTTP would make a second job for a window, so intake refuses it.
  submittable: false,
  // 02:00 UTC every day; the window is the UTC day starting at 02:00.
  schedule: {
    cron: '0 2 * * *',
    window: { length: DAY, offset: 2 * 3_600_000 },
    perTenant: true,
    catchupWindow: DAY,
    input: digestInput,
  },
});
