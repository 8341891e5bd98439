import { maxInSlidingWindow } from '../support/queries.js';
import { describe, expect, it } from 'vitest';
import {
  admissionWaitMs,
  formatAge,
  formatDuration,
  formatRate,
  netDrain,
  perWindow,
  ratePerMinute,
  recovery,
  sparkline,
  unfinishedSeries,
} from '../../lib/health.js';
import { deferralPollMs } from '../../workflows/admission.js';

describe('rates over sliding windows', () => {
  it('turns a count over a window into a per-minute rate', () => {
    expect(ratePerMinute(30, 60)).toBe(30);
    expect(ratePerMinute(30, 300)).toBe(6);
    expect(ratePerMinute(90, 900)).toBe(6);
    expect(ratePerMinute(5, 0)).toBe(0);
  });

  it('reports every window', () => {
    expect(perWindow((_k, s) => s)).toEqual({ '1m': 60, '5m': 300, '15m': 900 });
  });

  it('net drain is completions minus arrivals', () => {
    expect(netDrain(50, 20)).toBe(30);
    expect(netDrain(10, 25)).toBe(-15);
  });
});

describe('recovery ETA', () => {
  it("states the issue's example in words", () => {
    const r = recovery(10_000, 20);
    expect(r.state).toBe('draining');
    expect(r.etaSeconds).toBe(30_000);
    expect(r.words).toBe('backlog 10,000 draining at 20/min: about 8 h 20 min');
  });

  it('says never when the backlog grows or stands still', () => {
    expect(recovery(120, -5)).toMatchObject({ state: 'never', etaSeconds: null, words: 'backlog 120 growing at 5/min: never' });
    expect(recovery(40, 0)).toMatchObject({ state: 'never', etaSeconds: null, words: 'backlog 40 not draining (0/min): never' });
  });

  it('is empty with no backlog, whatever the rates', () => {
    expect(recovery(0, -3)).toMatchObject({ state: 'empty', etaSeconds: 0, words: 'backlog empty' });
  });

  it('rounds durations to what matters at their size', () => {
    expect(formatDuration(0.3)).toBe('less than 1 s');
    expect(formatDuration(45)).toBe('about 45 s');
    expect(formatDuration(89.4)).toBe('about 89 s');
    expect(formatDuration(95)).toBe('about 2 min');
    expect(formatDuration(200)).toBe('about 3 min');
    expect(formatDuration(3 * 3600)).toBe('about 3 h');
    expect(formatDuration(30_000)).toBe('about 8 h 20 min');
    expect(formatDuration(200_000)).toBe('about 2 d 8 h');
    expect(formatDuration(Number.POSITIVE_INFINITY)).toBe('never');
  });

  it('formats rates and ages', () => {
    expect(formatRate(20)).toBe('20/min');
    expect(formatRate(0.25)).toBe('0.25/min');
    expect(formatRate(1234.5)).toBe('1,235/min');
    expect(formatAge(null)).toBe('-');
    expect(formatAge(75)).toBe('1 min 15 s');
    expect(formatAge(7260)).toBe('2 h 1 min');
  });
});

describe('sparklines', () => {
  it('scales a series between its own minimum and maximum', () => {
    expect(sparkline([0, 1, 2, 3, 4, 5, 6, 7])).toBe('▁▂▃▄▅▆▇█');
    expect(sparkline([5, 5, 5])).toBe('▄▄▄');
    expect(sparkline([0, 0])).toBe('▁▁');
    expect(sparkline([1, null, 3])).toBe('▁ █');
    expect(sparkline([null, null])).toBe('  ');
  });
});

describe('backlog trend rebuilt from arrivals and completions', () => {
  it('walks back from the count now', () => {
    // minute 0: 10 arrive; minute 1: 5 complete; minute 2 (now): 2 arrive, 4 complete → 3 now.
    expect(unfinishedSeries(3, [10, 0, 2], [0, 5, 4])).toEqual([10, 5, 3]);
  });
});

describe('admission ramp', () => {
  it('caps admissions per minute and says how long until one more fits', () => {
    const now = 100_000;
    expect(admissionWaitMs(now, [now - 1_000, now - 2_000], 3)).toBe(0);
    // Three in the last minute at rate 3: wait until the oldest (now - 50 s) ages out.
    expect(admissionWaitMs(now, [now - 1_000, now - 50_000, now - 2_000], 3)).toBe(10_000);
    // Older than a minute does not count.
    expect(admissionWaitMs(now, [now - 61_000, now - 70_000], 1)).toBe(0);
  });

  it('measures the most events inside any one-minute window', () => {
    expect(maxInSlidingWindow([0, 30_000, 59_999, 60_000, 61_000], 60_000)).toBe(4);
    expect(maxInSlidingWindow([0, 59_999, 60_000], 60_000)).toBe(2);
    expect(maxInSlidingWindow([], 60_000)).toBe(0);
    const even = Array.from({ length: 200 }, (_, i) => i * 500); // 120/min, evenly spaced
    expect(maxInSlidingWindow(even, 60_000)).toBe(120);
  });

  it('re-checks a deferral quickly at first, then less often, capped', () => {
    expect(deferralPollMs(null, 0)).toBe(1_000);
    expect(deferralPollMs(1_000, 1_000)).toBe(2_000);
    expect(deferralPollMs(16_000, 60_000)).toBe(30_000);
    expect(deferralPollMs(30_000, 3_600_000)).toBe(60_000);
    expect(deferralPollMs(300_000, 100 * 3_600_000)).toBe(300_000);
  });
});
