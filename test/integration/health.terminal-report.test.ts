import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startHarness, type Harness } from '../support/harness.js';

const ENTRY = fileURLToPath(new URL('../../scripts/health.ts', import.meta.url));

let h: Harness;
beforeAll(async () => {
  h = await startHarness('health-terminal');
  // Two jobs succeed, one is refused by the upstream (dead-lettered): figures the report must show.
  await h.simFault({ path: '/v1/summaries', times: 1, status: 400 });
  const bad = await h.submit('summarize', { text: 'refused upstream' });
  await h.waitForStatus(bad.body.jobId, 'dead_lettered');
  for (const text of ['first fine', 'second fine']) {
    const r = await h.submit('summarize', { text });
    await h.waitForStatus(r.body.jobId, 'succeeded');
  }
});
afterAll(async () => {
  await h?.close();
});

/** `npm run health` as a user runs it: a separate process, its exit code and output. */
function health(args: string[], env: Record<string, string | undefined>): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', ENTRY, ...args],
      { env: { ...process.env, DATABASE_URL: undefined, TEMPORAL_ADDRESS: undefined, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

describe('npm run health: the terminal report', () => {
  it('prints the figures of the running API: finished jobs by outcome, dead letters, attempts', async () => {
    const { code, out } = await health(['--url', h.baseUrl], { ADMIN_API_KEY: ADMIN_KEY });
    expect(code, out).toBe(0);
    expect(out).toMatch(/^durable-jobs queue health at \S+Z/);
    expect(out).toMatch(/^RECOVERY {2}\S/m);
    expect(out).toMatch(/^ {2}summarize +active 0 \(deferred 0\)/m);
    expect(out).toContain('15 min: 2 succeeded, 1 dead-lettered, 0 cancelled');
    expect(out).toMatch(/^ {2}dead letters created( +\d+)+ +open 1, oldest open/m);
    expect(out).toMatch(/^ {2}attempts: succeeded( +\d+)+/m);
    expect(out).toMatch(/^ {2}attempts: non_retryable( +\d+)+/m);
    // What the JSON says is what the table says.
    const json = await health(['--url', h.baseUrl, '--json'], { ADMIN_API_KEY: ADMIN_KEY });
    expect(json.code, json.out).toBe(0);
    const figures = JSON.parse(json.out);
    expect(figures.jobTypes.summarize.finished15m).toMatchObject({ succeeded: 2, deadLettered: 1, cancelled: 0 });
    expect(figures.deadLetters.open).toBe(1);
  });

  it('reads the same figures straight from Postgres (--direct)', async () => {
    const { code, out } = await health(['--direct'], { DATABASE_URL: h.databaseUrl, TASK_QUEUE: h.taskQueue });
    expect(code, out).toBe(0);
    expect(out).toContain('15 min: 2 succeeded, 1 dead-lettered, 0 cancelled');
    expect(out).toMatch(/^ {2}dead letters created( +\d+)+ +open 1, oldest open/m);
  });

  it('says what to set when the admin key is wrong, and exits non-zero', async () => {
    const { code, out } = await health(['--url', h.baseUrl], { ADMIN_API_KEY: 'not-the-admin-key-0123456789abcdef0123' });
    expect(code).toBe(1);
    expect(out).toContain('health: 401 from');
    expect(out).toContain('set ADMIN_API_KEY');
    expect(out).not.toContain('not-the-admin-key-0123456789abcdef0123');
  });
});
