import { describe, expect, it } from 'vitest';
import { stackWaitingFor, waitForStack, type StackProbes } from '../../scripts/lib/stack-ready.js';
import { maskDatabaseUrl, postgresBannerLine, showDatabasePassword } from '../../scripts/lib/banner.js';

const expect1 = { workers: 1, ownIdentities: ['101@host'], taskQueue: 'durable-jobs' };

describe('npm start: when the stack is up', () => {
  it('waits for /readyz 200 and a poller of its own, naming what is missing', () => {
    expect(stackWaitingFor({ readyz: 'not listening yet', pollers: [] }, expect1)).toEqual([
      "the API's /readyz to answer 200 (not listening yet)",
      'a worker to poll the task queue durable-jobs',
    ]);
    expect(stackWaitingFor({ readyz: 503, pollers: ['101@host'] }, expect1)).toEqual(["the API's /readyz to answer 200 (now 503)"]);
    expect(stackWaitingFor({ readyz: 200, pollers: ['101@host'] }, expect1)).toEqual([]);
  });

  it("does not count a poller Temporal still lists from an earlier run's worker", () => {
    expect(stackWaitingFor({ readyz: 200, pollers: ['99@host'] }, expect1)).toEqual(['a worker to poll the task queue durable-jobs']);
  });

  it('with WORKERS=0 waits for the API only', () => {
    expect(stackWaitingFor({ readyz: 200, pollers: [] }, { ...expect1, workers: 0, ownIdentities: [] })).toEqual([]);
  });

  it('looks until both answer, reporting what it still waits for', async () => {
    // The API answers on the 3rd look, the worker polls from the 5th; /readyz is not asked again once it said 200.
    let looks = 0;
    let readyzAsked = 0;
    const probes: StackProbes = {
      readyz: async () => (++readyzAsked >= 3 ? 200 : 'not listening yet'),
      pollers: async () => (++looks >= 5 ? ['7@h'] : []),
    };
    const reports: string[][] = [];
    const missing = await waitForStack({
      workers: 1,
      ownIdentities: ['7@h'],
      taskQueue: 'q',
      probes,
      everyMs: 1,
      reportAfterMs: 0,
      report: (w) => reports.push(w),
    });
    expect(missing).toEqual([]);
    expect(looks).toBe(5);
    expect(readyzAsked).toBe(3);
    expect(reports[0]).toHaveLength(2);
    expect(reports.at(-1)).toEqual(['a worker to poll the task queue q']);
  });

  it('treats a failing probe as not ready, and ends with what is missing when aborted', async () => {
    const stop = new AbortController();
    const missing = await waitForStack({
      workers: 1,
      ownIdentities: ['7@h'],
      taskQueue: 'q',
      probes: {
        readyz: async () => 200,
        pollers: async () => {
          stop.abort();
          throw new Error('Temporal unavailable');
        },
      },
      signal: stop.signal,
    });
    expect(missing).toEqual(['a worker to poll the task queue q']);
  });
});

describe("npm start's Postgres line", () => {
  const url = 'postgres://postgres:postgres@127.0.0.1:43733/postgres';

  it('masks the password unless SHOW_DATABASE_PASSWORD=1, and names where the data lives', () => {
    const line = postgresBannerLine({ url, dataDir: '.data/pg', showPassword: showDatabasePassword({}) });
    expect(line).not.toContain(':postgres@');
    expect(line).toContain('postgres://postgres:***@127.0.0.1:43733/postgres');
    expect(line).toContain('embedded, data in .data/pg');
    expect(line).toContain('SHOW_DATABASE_PASSWORD=1');
    const shown = postgresBannerLine({ url, dataDir: '.data/pg', showPassword: showDatabasePassword({ SHOW_DATABASE_PASSWORD: '1' }) });
    expect(shown).toContain(url);
    expect(shown).not.toContain('SHOW_DATABASE_PASSWORD');
  });

  it("masks an external DATABASE_URL's password too and never prints an unparseable one", () => {
    const line = postgresBannerLine({ url: 'postgres://app:s3cret@db.internal:5432/jobs', dataDir: null, showPassword: false });
    expect(line).not.toContain('s3cret');
    expect(line).toContain('(DATABASE_URL;');
    expect(postgresBannerLine({ url: 'postgres://app@db/jobs', dataDir: null, showPassword: false })).toMatch(/\(DATABASE_URL\)$/);
    expect(maskDatabaseUrl('not a url s3cret')).not.toContain('s3cret');
    expect(showDatabasePassword({ SHOW_DATABASE_PASSWORD: '0' })).toBe(false);
  });
});
