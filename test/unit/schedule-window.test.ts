import { describe, expect, it } from 'vitest';
import { scheduleDeclarations, scheduleOptionsFor, scanInputFor, type ScheduleDeclaration } from '../../services/schedules.js';
import { defaultJobRegistry } from '../../jobs/index.js';

// What the shipped registry declares: the digest's schedule (in its definition) and the scan.
const SCHEDULE_DECLARATIONS = scheduleDeclarations(defaultJobRegistry);
import { IDEMPOTENCY_KEY_PATTERN } from '../../lib/ids.js';
import { windowContaining, windowKey } from '../../contract/schedule-window.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe('windowContaining', () => {
  it('maps every instant of a window to the same window, and the next instant to the next one', () => {
    const grid = { windowMs: DAY, windowOffsetMs: 2 * HOUR };
    const w = windowContaining(Date.parse('2025-06-01T02:00:00Z'), grid);
    expect(w).toEqual({ start: '2025-06-01T02:00:00.000Z', end: '2025-06-02T02:00:00.000Z' });
    expect(windowContaining(Date.parse('2025-06-01T17:45:12.345Z'), grid)).toEqual(w);
    expect(windowContaining(Date.parse('2025-06-02T01:59:59.999Z'), grid)).toEqual(w);
    expect(windowContaining(Date.parse('2025-06-02T02:00:00Z'), grid).start).toBe('2025-06-02T02:00:00.000Z');
    expect(windowContaining(Date.parse('2025-06-01T01:00:00Z'), grid).start).toBe('2025-05-31T02:00:00.000Z');
  });

  it('aligns at the epoch without an offset', () => {
    expect(windowContaining(Date.parse('2025-06-01T10:37:00Z'), { windowMs: HOUR }).start).toBe('2025-06-01T10:00:00.000Z');
  });

  it('refuses windows shorter than a second and non-finite times', () => {
    expect(() => windowContaining(0, { windowMs: 10 })).toThrow(RangeError);
    expect(() => windowContaining(Number.NaN, { windowMs: HOUR })).toThrow(RangeError);
  });
});

describe('windowKey', () => {
  it('can never be sent as a client Idempotency-Key (it has spaces)', () => {
    const key = windowKey('digest', { start: '2025-06-01T02:00:00.000Z', end: '2025-06-02T02:00:00.000Z' });
    expect(IDEMPOTENCY_KEY_PATTERN.test(key)).toBe(false);
    expect(key).toContain('2025-06-01T02:00:00.000Z');
  });
});

describe('schedule declarations', () => {
  it('ship a digest and the compensation scan with stable, prefixed IDs', () => {
    const ids = SCHEDULE_DECLARATIONS.map((d) => scheduleOptionsFor(d, 'q', 'q', SCHEDULE_DECLARATIONS).scheduleId);
    expect(ids).toEqual(['q.digest', 'q.compensation-scan']);
  });

  it('hash the same declaration the same, and a changed one differently', () => {
    const a = scheduleOptionsFor(SCHEDULE_DECLARATIONS[0]!, 'q', 'q', SCHEDULE_DECLARATIONS).declarationHash;
    expect(scheduleOptionsFor(SCHEDULE_DECLARATIONS[0]!, 'q', 'q', SCHEDULE_DECLARATIONS).declarationHash).toBe(a);
    const changed: ScheduleDeclaration = { ...SCHEDULE_DECLARATIONS[0]!, catchupWindowMs: HOUR };
    expect(scheduleOptionsFor(changed, 'q', 'q', SCHEDULE_DECLARATIONS).declarationHash).not.toBe(a);
    expect(scheduleOptionsFor(SCHEDULE_DECLARATIONS[0]!, 'other', 'q', SCHEDULE_DECLARATIONS).declarationHash).not.toBe(a);
  });

  it('give the scan the window grid of every scheduled job type', () => {
    const input = scanInputFor(SCHEDULE_DECLARATIONS, 'q');
    expect(input.schedules).toEqual([
      { schedule: 'digest', scheduleId: 'q.digest', jobType: 'digest', windowMs: DAY, windowOffsetMs: 2 * HOUR, fillLookbackMs: 7 * DAY },
    ]);
  });
});
