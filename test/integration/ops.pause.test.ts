import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPausesAdmin } from '../../client/index.js';
import { createJobRegistry } from '../../job-api/registry.js';
import { builtInJobTypes } from '../../jobs/index.js';
import { attemptsForJob } from '../../store/attempts.js';
import { progressStepsJobType } from '../fixtures/jobs/progress-steps/activities.js';
import { ADMIN_KEY, operatorKey, startHarness, waitFor, type Harness } from '../support/harness.js';

// Issue 38 §4: operators pause a job type, a tenant, or a tenant's type as well as a priority.
// Jobs not admitted yet wait (`deferred`); admitted ones are held at their next step with no
// attempt spent; the tenant reads what is paused ("by an operator"), the timeline and the audit
// say who; the ramp applies on resume.
const registry = createJobRegistry([...builtInJobTypes, progressStepsJobType]);
let h: Harness;
beforeAll(async () => {
  h = await startHarness('ops-pause', { jobTypes: registry });
});
afterAll(async () => {
  await h?.close();
});
afterEach(async () => {
  // Whatever a test paused is lifted, so the next one starts clean.
  await h.api('/v1/admin/degradation', { method: 'PUT', tenant: null, headers: alice, body: { pausedPriorities: [], pausedScopes: [] } });
});

const alice = { authorization: `Bearer ${operatorKey('alice')}` };
const pause = (body: Record<string, unknown>) => h.api('/v1/admin/pauses', { tenant: null, headers: alice, body });
const resume = (body: Record<string, unknown>) => h.api('/v1/admin/pauses/resume', { tenant: null, headers: alice, body });
const timelineOf = async (jobId: string) =>
  (await h.api(`/v1/admin/jobs/${jobId}/timeline`, { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } })).body;

async function evidence(jobId: string, step?: string) {
  const [leases, intent] = await Promise.all([
    h.pool.query('SELECT step, outcome FROM activity_leases WHERE job_id = $1 AND ($2::text IS NULL OR step = $2)', [jobId, step ?? null]),
    h.pool.query('SELECT status, attempts, first_started_at FROM job_intents WHERE job_id = $1', [jobId]),
  ]);
  const attempts = (await attemptsForJob(h.pool, jobId)).filter((a) => step === undefined || a.step === step);
  return { leases: leases.rows, attempts, intent: intent.rows[0] };
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** `durable-jobs pause ...` against this file's API, as operator erin. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/durable-jobs.ts', 'pause', ...args], {
      cwd: ROOT,
      env: { ...process.env, DJ_API_URL: h.baseUrl, ADMIN_API_KEY: operatorKey('erin') },
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('pauses by tenant and type', () => {
  it("holds one tenant's jobs of one type, not the other tenant's, says so without the operator's name, and audits it", async () => {
    const p = await pause({ tenantId: 'tenant-a', jobType: 'summarize', reason: 'tenant a floods summarize' });
    expect(p.status).toBe(200);
    expect(p.body.pausedScopes).toEqual([
      { tenantId: 'tenant-a', jobType: 'summarize', since: expect.any(String), by: 'alice', reason: 'tenant a floods summarize' },
    ]);

    const held = (await h.submit('summarize', { text: 'Held by the pause of the pair.' })).body.jobId;
    const other = (await h.submit('summarize', { text: 'Another tenant runs.' }, { tenant: 'b' })).body.jobId;
    expect((await h.waitForStatus(other, 'succeeded', 'b')).attempts).toBe(1);
    const deferred = await h.waitForStatus(held, 'deferred');
    expect(deferred.statusReason).toMatch(/^this tenant's summarize jobs are paused by an operator since \S+; they resume at \d+\/min/);
    expect(JSON.stringify(deferred)).not.toContain('alice');
    expect(await evidence(held)).toMatchObject({ leases: [], attempts: [], intent: { status: 'deferred', attempts: 0 } });

    // Re-pausing keeps the first since; the list says what is paused and by whom.
    await pause({ tenantId: 'tenant-a', jobType: 'summarize' });
    const list = await h.api('/v1/admin/pauses', { tenant: null, headers: alice });
    expect(list.body.pausedScopes).toEqual(p.body.pausedScopes);

    expect((await resume({ tenantId: 'tenant-a', jobType: 'summarize', reason: 'flood over' })).status).toBe(200);
    expect((await h.waitForStatus(held, 'succeeded')).attempts).toBe(1);
    const events: { event: string; detail?: string }[] = (await timelineOf(held)).events;
    expect(events.map((e) => e.event)).toEqual(
      expect.arrayContaining([
        'summarize jobs of tenant tenant-a paused by alice',
        'summarize jobs of tenant tenant-a resumed by alice',
        'deferred',
        'admitted after deferral',
      ]),
    );
    const audit = await h.pool.query(`SELECT actor, reason FROM degradation_audit ORDER BY id`);
    expect(audit.rows).toEqual(
      expect.arrayContaining([
        { actor: 'alice', reason: 'tenant a floods summarize' },
        { actor: 'alice', reason: 'flood over' },
      ]),
    );
  });

  it('holds an admitted job at its next step with no attempt spent, and runs that step once resumed', async () => {
    await h.simFault({ path: '/v1/charges', status: 200, delayMs: 300_000, times: 1 });
    const jobId = (await h.submit('progress-steps', { parts: 2, note: 'held between steps' })).body.jobId;
    // The first step is in its call (the simulator holds the answer): the job is admitted and running.
    await waitFor(
      'the first step in its call',
      async () => (await h.api(`/v1/jobs/${jobId}`)).body?.progress?.note === 'waiting for the provider',
    );
    expect((await pause({ jobType: 'progress-steps', reason: 'provider maintenance' })).status).toBe(200);
    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });

    const deferred = await h.waitForStatus(jobId, 'deferred');
    expect(deferred.statusReason).toMatch(/^progress-steps jobs are paused by an operator since /);
    // The first step ran once; the second has no lease, no attempt, no call.
    const first = await evidence(jobId, 'count');
    expect(first.attempts.map((a) => [a.step, a.outcome])).toEqual([['count', 'succeeded']]);
    const second = await evidence(jobId, 'finish');
    expect(second).toMatchObject({ leases: [], attempts: [] });
    expect((await h.simEffects()).byKey[`${jobId}:finish`]).toBeUndefined();
    // No failed activity in the history: the held step returned its wait.
    const history = (await h.temporal.workflow.getHandle(jobId).fetchHistory()).events ?? [];
    expect(history.filter((e) => e.activityTaskFailedEventAttributes)).toEqual([]);

    expect((await resume({ jobType: 'progress-steps' })).status).toBe(200);
    const done = await h.waitForStatus(jobId, 'succeeded');
    expect((await evidence(jobId, 'finish')).attempts.map((a) => [a.step, a.attempt, a.outcome])).toEqual([['finish', 1, 'succeeded']]);
    expect((await h.simEffects()).byKey[`${jobId}:finish`]).toMatchObject({ applied: 1, requests: 1 });
    expect(done.deferredMs).toBeGreaterThanOrEqual(0);
  });

  it('pauses a whole tenant from backend code (createPausesAdmin), audited under the caller it names', async () => {
    const pauses = createPausesAdmin(h.pool, registry);
    const after = await pauses.pause({ tenantId: 'tenant-b', reason: 'abuse review' }, { actor: 'backend-ops' });
    expect(after.pausedScopes).toEqual([{ tenantId: 'tenant-b', since: expect.any(String), by: 'backend-ops', reason: 'abuse review' }]);
    const held = (await h.submit('summarize', { text: 'Tenant b is paused.' }, { tenant: 'b' })).body.jobId;
    const free = (await h.submit('summarize', { text: 'Tenant a is not.' })).body.jobId;
    expect((await h.waitForStatus(free, 'succeeded')).attempts).toBe(1);
    expect((await h.waitForStatus(held, 'deferred', 'b')).statusReason).toMatch(/^this tenant's jobs are paused by an operator/);
    expect((await pauses.resume({ tenantId: 'tenant-b' })).pausedScopes).toEqual([]);
    expect((await h.waitForStatus(held, 'succeeded', 'b')).attempts).toBe(1);
  });

  it('refuses a pause that names nothing, an unknown type or tenant, or two kinds at once, naming the field and changing nothing', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'priority'],
      [{ jobType: 'no-such-type' }, 'jobType'],
      [{ tenantId: 'ghost-tenant' }, 'tenantId'],
      [{ tenantId: 'Not A Tenant!' }, 'tenantId'],
      [{ priority: 'low', tenantId: 'tenant-a' }, 'priority'],
      [{ jobType: 'summarize', extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const r = await pause(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(
        r.body.errors.map((e: { path: string }) => e.path),
        JSON.stringify(body),
      ).toContain(field);
    }
    const list = await h.api('/v1/admin/pauses', { tenant: null, headers: alice });
    expect(list.body).toMatchObject({ pausedPriorities: [], pausedScopes: [] });
    expect((await h.api('/v1/admin/pauses', { tenant: 'a', body: { jobType: 'summarize' } })).status).toBe(401);
  });

  it('are made and listed by `durable-jobs pause`, under the operator its key names', async () => {
    const added = await cli('add', '--tenant', 'tenant-b', '--type', 'summarize', '--reason', 'from the CLI');
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/summarize jobs of tenant tenant-b\s+\S+\s+erin\s+from the CLI/);
    const listed = await cli('list', '--json');
    expect(JSON.parse(listed.stdout).pausedScopes).toEqual([
      { tenantId: 'tenant-b', jobType: 'summarize', since: expect.any(String), by: 'erin', reason: 'from the CLI' },
    ]);
    expect((await cli('resume', '--tenant', 'tenant-b', '--type', 'summarize')).stdout).toMatch(/^nothing is paused$/m);
    expect(await cli('add')).toMatchObject({ code: 2, stderr: expect.stringContaining('add needs --priority, or --tenant and/or --type') });
    expect(await cli('add', '--type', 'no-such-type')).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/400 .*jobType: must be a registered job type/),
    });
  });

  it('keeps the priority calls working: PUT /v1/admin/degradation and POST /v1/admin/pauses {"priority"} are one setting', async () => {
    expect((await pause({ priority: 'low' })).body.pausedPriorities).toEqual(['low']);
    const g = await h.api('/v1/admin/degradation', { tenant: null, headers: alice });
    expect(g.body.pausedPriorities).toEqual(['low']);
    const put = await h.api('/v1/admin/degradation', {
      method: 'PUT',
      tenant: null,
      headers: alice,
      body: { pausedPriorities: [], pausedScopes: [{ jobType: 'summarize' }] },
    });
    expect(put.status).toBe(200);
    expect(put.body.pausedScopes).toEqual([{ jobType: 'summarize', since: expect.any(String), by: 'alice' }]);
    expect((await resume({ jobType: 'summarize' })).body).toMatchObject({ pausedPriorities: [], pausedScopes: [] });
  });
});
