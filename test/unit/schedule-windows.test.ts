import { describe, expect, it } from 'vitest';
import { pauseAt, pauseSpans, windowStates, type WindowFacts } from '../../services/schedule-windows.js';
import type { WindowRow } from '../../store/schedules.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-12-07T05:00:00.000Z');
const at = (d: number) => new Date(Date.parse('2026-12-07T03:30:00.000Z') - d * DAY);
const expected = (d: number) => ({ start: at(d).toISOString(), end: at(d - 1).toISOString(), firedAt: at(d).getTime() });
const row = (d: number, over: Partial<WindowRow> = {}): WindowRow => ({
  job_type: 'usage-report',
  window_start: at(d),
  window_end: at(d - 1),
  schedule_id: 'tq.usage-report',
  first_source: 'schedule',
  first_trigger_id: 'x',
  triggers: 1,
  jobs: 2,
  first_seen_at: at(d),
  last_seen_at: at(d),
  filled_at: at(d),
  ...over,
});
const facts = (over: Partial<WindowFacts>): WindowFacts => ({
  expected: [],
  rows: [],
  now: NOW,
  scheduleCreatedAt: at(9).getTime(),
  fillLookbackMs: 7 * DAY,
  graceMs: 5 * 60_000,
  scanErrors: [],
  pauses: [],
  ...over,
});
const stateOf = (f: WindowFacts) => Object.fromEntries(windowStates(f).map((w) => [w.start, [w.state, w.reason]]));

describe('windowStates: each window of a scheduled type, with its state and why', () => {
  it('tells filled (by the Schedule or by hand) from late-filled by the scan', () => {
    const s = stateOf(
      facts({
        expected: [expected(1), expected(2), expected(3)],
        rows: [row(1), row(2, { first_source: 'manual' }), row(3, { first_source: 'scan' })],
      }),
    );
    expect(s[at(1).toISOString()]).toEqual(['filled', 'by the Schedule']);
    expect(s[at(2).toISOString()]).toEqual(['filled', 'by a manual trigger']);
    expect(s[at(3).toISOString()]![0]).toBe('late-filled');
    expect(s[at(3).toISOString()]![1]).toMatch(/compensation scan found it missed/);
  });

  it('skips with the reason: the scan error recorded for the window, the lookback, the Schedule not yet created', () => {
    const s = stateOf(
      facts({
        expected: [expected(2), expected(8), expected(10)],
        scanErrors: [
          { details: [`window ${at(2).toISOString()}: job type usage-report: schedule.input(window) does not fit its input schema`] },
        ],
      }),
    );
    expect(s[at(2).toISOString()]).toEqual([
      'skipped',
      'the compensation scan could not fill it: job type usage-report: schedule.input(window) does not fit its input schema',
    ]);
    expect(s[at(8).toISOString()]).toEqual(['skipped', "older than the scan's fill lookback (7 d): backfill it to run it"]);
    expect(stateOf(facts({ expected: [expected(4)], scheduleCreatedAt: at(3).getTime() }))[at(4).toISOString()]![0]).toBe('skipped');
  });

  it('a missed window waits for the scan, one that just fired is due, a partly started one is missed, newest first', () => {
    const justFired = { start: new Date(NOW - 60_000).toISOString(), end: new Date(NOW + DAY).toISOString(), firedAt: NOW - 60_000 };
    const views = windowStates(facts({ expected: [expected(1), justFired, expected(2)], rows: [row(2, { filled_at: null, jobs: null })] }));
    expect(views.map((w) => w.state)).toEqual(['due', 'missed', 'missed']);
    expect(views[2]!.reason).toMatch(/not every tenant has its job yet/);
  });

  it("skips a window that fired during an operator's pause, naming who paused it and why; before and after it, missed", () => {
    const pauses = pauseSpans([
      { action: 'paused', actor: 'ops-anna', reason: 'upstream migration', at: new Date(at(4).getTime() - 60_000) },
      { action: 'unpaused', actor: 'ops-anna', reason: 'done', at: new Date(at(3).getTime() + 60_000) },
    ]);
    const s = stateOf(facts({ expected: [expected(5), expected(4), expected(3), expected(2)], pauses }));
    expect(s[at(4).toISOString()]).toEqual(['skipped', 'the Schedule was paused by ops-anna (upstream migration): backfill it to run it']);
    expect(s[at(3).toISOString()]![0]).toBe('skipped');
    expect(s[at(5).toISOString()]![0]).toBe('missed');
    expect(s[at(2).toISOString()]![0]).toBe('missed');
  });
});

describe('pauseSpans: the operator pauses of a Schedule from its audit rows', () => {
  const t = (m: number) => new Date(NOW + m * 60_000);
  it('pairs each pause with the unpause after it; a repeated pause or unpause changes nothing; the last one may be open', () => {
    const spans = pauseSpans([
      { action: 'unpaused', actor: 'a', reason: null, at: t(0) },
      { action: 'paused', actor: 'a', reason: 'one', at: t(1) },
      { action: 'paused', actor: 'b', reason: 'again', at: t(2) },
      { action: 'unpaused', actor: 'a', reason: null, at: t(3) },
      { action: 'unpaused', actor: 'b', reason: null, at: t(4) },
      { action: 'paused', actor: 'c', reason: null, at: t(5) },
    ]);
    expect(spans).toEqual([
      { from: t(1).getTime(), to: t(3).getTime(), by: 'a', reason: 'one' },
      { from: t(5).getTime(), to: null, by: 'c', reason: null },
    ]);
    expect(pauseAt(spans, t(0).getTime())).toBeUndefined();
    expect(pauseAt(spans, t(1).getTime())?.by).toBe('a');
    expect(pauseAt(spans, t(3).getTime())).toBeUndefined();
    expect(pauseAt(spans, t(100).getTime())?.by).toBe('c');
  });
});
