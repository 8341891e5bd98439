import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { checkedReport, createProgressReporter, type StoredProgress } from '../../job-api/progress.js';

// ctx.progress (issue 38 §6): stored at most once a second however often a step reports, the
// newest report always stored in the end, and a bad report refused naming its field.
describe('the progress reporter', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function reporter() {
    const writes: StoredProgress[] = [];
    const beats: StoredProgress[] = [];
    const r = createProgressReporter('count', {
      write: async (p) => {
        writes.push(p);
      },
      onReport: (p) => beats.push(p),
      onError: (e) => {
        throw e;
      },
      intervalMs: 1_000,
      now: () => Date.now(),
    });
    return { r, writes, beats };
  }

  it('writes the first report at once and the newest of a burst one interval later, not each', async () => {
    const { r, writes, beats } = reporter();
    for (let done = 0; done < 100; done++) r.report({ done, total: 100 });
    await vi.advanceTimersByTimeAsync(0);
    expect(writes).toEqual([{ done: 0, total: 100, step: 'count' }]);
    // Every report reaches the heartbeat's details at once.
    expect(beats).toHaveLength(100);
    await vi.advanceTimersByTimeAsync(999);
    expect(writes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(2);
    expect(writes.map((w) => w.done)).toEqual([0, 99]);
    // Nothing new: no write.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(writes).toHaveLength(2);
  });

  it('stores the last report when the step ends (flush), and only once', async () => {
    const { r, writes } = reporter();
    r.report({ done: 1 });
    await vi.advanceTimersByTimeAsync(0);
    r.report({ done: 2, note: 'almost' });
    await r.flush();
    expect(writes.map((w) => w.done)).toEqual([1, 2]);
    await r.flush();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(writes).toHaveLength(2);
  });

  it('refuses a bad report naming the field', () => {
    const issues = (p: unknown) => {
      try {
        checkedReport(p as never);
        return [];
      } catch (e) {
        return (e as { fields: { path: string }[] }).fields.map((f) => f.path);
      }
    };
    expect(issues({ done: -1 })).toEqual(['progress.done']);
    expect(issues({ done: Number.NaN })).toEqual(['progress.done']);
    expect(issues({ done: 1, total: Infinity })).toEqual(['progress.total']);
    expect(issues({ done: 1, note: 'x'.repeat(201) })).toEqual(['progress.note']);
    expect(checkedReport({ done: 2, total: 3, note: 'ok' })).toEqual({ done: 2, total: 3, note: 'ok' });
  });
});
