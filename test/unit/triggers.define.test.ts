import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineJob } from '../../job-api/define.js';
import { cronError } from '../../job-api/define-triggers.js';
import { createJobRegistry, jobType } from '../../job-api/registry.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { jobScheduleDeclarations } from '../../services/schedules.js';
import { routeEvent, webhookRoutes } from '../../services/webhook-routes.js';

const DAY = 86_400_000;
const base = { workflowType: 'xJob', description: 'x', input: z.object({ n: z.number() }).strict(), effects: ['e'] as const };
const define = (extra: Record<string, unknown>) => () => defineJob({ ...base, name: 'nightly-x', ...extra });

describe('cron expressions', () => {
  it('accepts five fields with values, ranges, lists, steps and names, and the macros', () => {
    for (const ok of ['0 2 * * *', '*/15 9-17 * * MON-FRI', '0 0 1,15 JAN,jul *', '30 3 * * 0', '@daily', '@hourly'])
      expect(cronError(ok), ok).toBeUndefined();
  });
  it('says what is wrong', () => {
    expect(cronError('0 2 * *')).toContain('5 fields');
    expect(cronError('61 2 * * *')).toContain('minute');
    expect(cronError('0 24 * * *')).toContain('hour');
    expect(cronError('0 2 0 * *')).toContain('day of month');
    expect(cronError('0 2 * 13 *')).toContain('month');
    expect(cronError('0 2 * * FUNDAY')).toContain('day of week');
    expect(cronError('0 5-2 * * *')).toContain('ends before it starts');
    expect(cronError('*/0 * * * *')).toContain('step');
    expect(cronError('@fortnightly')).toContain('@daily');
  });
});

describe('defineJob({ schedule })', () => {
  it('refuses a bad schedule at definition time, naming the job type and the field', () => {
    expect(define({ schedule: { cron: '0 25 * * *', window: { length: DAY } } })).toThrow(/^job type nightly-x: schedule\.cron .*hour/);
    expect(define({ schedule: { cron: '0 2 * * *' } })).toThrow('job type nightly-x: a cron schedule needs window.length');
    expect(define({ schedule: { every: 60_000, cron: '* * * * *' } })).toThrow(
      'job type nightly-x: schedule needs exactly one of cron and every',
    );
    expect(define({ schedule: { every: 1_500 } })).toThrow('job type nightly-x: schedule.every must be a whole number of seconds');
    expect(define({ schedule: { every: 60_000, catchupWindow: 1_000 } })).toThrow(/schedule\.catchupWindow .* at least 10000/);
    expect(define({ schedule: { every: 60_000, perTenant: false } })).toThrow(
      'job type nightly-x: a schedule with perTenant: false needs tenant',
    );
    expect(define({ schedule: { every: 60_000, tenant: 'tenant-a' } })).toThrow('schedule.tenant is only for perTenant: false');
    expect(define({ schedule: { cron: '0 2 * * *', window: { length: DAY }, timezone: 'not a zone' } })).toThrow('schedule.timezone');
  });

  it('fills the defaults: the interval is the window, one job per tenant, a day of catch-up, a week of scan lookback', () => {
    const d = define({ schedule: { every: 3_600_000, offset: 60_000 } })();
    expect(d.schedule).toMatchObject({
      timing: { every: 3_600_000, offset: 60_000 },
      windowMs: 3_600_000,
      windowOffsetMs: 60_000,
      perTenant: true,
      tenant: null,
      catchupWindowMs: DAY,
      fillLookbackMs: 7 * DAY,
    });
    expect(d.schedule!.input({ start: 'a', end: 'b' })).toEqual({ windowStart: 'a', windowEnd: 'b' });
    expect(define({})().schedule).toBeNull();
  });

  it("the shipped digest's Schedule comes from its definition, as the product declared it before", () => {
    expect(jobScheduleDeclarations(defaultJobRegistry)).toEqual([
      expect.objectContaining({
        kind: 'job',
        name: 'digest',
        jobType: 'digest',
        timing: { cron: ['0 2 * * *'], timezone: 'UTC' },
        windowMs: DAY,
        windowOffsetMs: 2 * 3_600_000,
        overlap: 'BUFFER_ALL',
        catchupWindowMs: DAY,
        paused: false,
      }),
    ]);
  });
});

describe('defineJob({ webhook }) and the routes of a registry', () => {
  const route = () => ({ start: { input: { n: 1 }, idempotencyKey: 'key-0001' } });
  it('refuses a bad source or no events at definition time', () => {
    expect(define({ webhook: { source: 'Shop!', events: ['x'], route } })).toThrow('job type nightly-x: webhook.source "Shop!"');
    expect(define({ webhook: { source: 'shop', events: [], route } })).toThrow('job type nightly-x: webhook.events');
  });

  it('refuses two types routing the same event of the same source', () => {
    const one = jobType(
      defineJob({ ...base, name: 'one', workflowType: 'oneJob', webhook: { source: 'shop', events: ['a', 'b'], route } }),
      {
        workflows: '/x.ts',
        activities: () => ({}),
      },
    );
    const two = jobType(defineJob({ ...base, name: 'two', workflowType: 'twoJob', webhook: { source: 'shop', events: ['b'], route } }), {
      workflows: '/x.ts',
      activities: () => ({}),
    });
    expect(() => webhookRoutes(createJobRegistry([one, two]))).toThrow('job types one and two both route event b of webhook source shop');
  });

  it('checks what a route returns against its type: key, input schema, declared step', () => {
    const make = (r: unknown) => {
      const t = jobType(
        defineJob({ ...base, name: 'one', workflowType: 'oneJob', webhook: { source: 'shop', events: ['a'], route: () => r as never } }),
        {
          workflows: '/x.ts',
          activities: () => ({}),
        },
      );
      return routeEvent(webhookRoutes(createJobRegistry([t])), { webhookId: 'w', source: 'shop', tenantId: null, type: 'a', data: {} });
    };
    expect(make({ start: { input: { n: 1 }, idempotencyKey: 'key-0001' } })).toEqual({
      kind: 'start',
      jobType: 'one',
      input: { n: 1 },
      idempotencyKey: 'key-0001',
    });
    expect(make({ start: { input: { n: 'x' }, idempotencyKey: 'key-0001' } })).toMatchObject({
      kind: 'invalid',
      detail: expect.stringContaining('input.n'),
    });
    expect(make({ start: { input: { n: 1 }, idempotencyKey: 'short' } })).toMatchObject({ kind: 'invalid' });
    expect(make({ signal: { name: 's', arg: 1, job: { step: 'other', providerId: 'p' } } })).toMatchObject({
      kind: 'invalid',
      detail: expect.stringContaining('step it does not declare'),
    });
    expect(make({ signal: { name: 's', arg: 1, job: { step: 'e', providerId: 'p' } } })).toMatchObject({
      kind: 'signal',
      target: { step: 'e', providerId: 'p' },
    });
    expect(make(undefined)).toEqual({ kind: 'ignore' });
    expect(make({ invalid: 'data.x is missing' })).toEqual({ kind: 'invalid', detail: 'data.x is missing' });
  });
});
