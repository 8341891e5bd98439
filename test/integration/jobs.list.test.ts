import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../lib/errors.js';
import { ADMIN_KEY, startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('job-lists');
});
afterAll(async () => {
  await h?.close();
});

const admin = (q: string) => h.api(`/v1/admin/jobs${q}`, { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
const ids = (r: { body: { jobs: Array<{ jobId: string }> } }) => r.body.jobs.map((j) => j.jobId);

/**
 * Rows of a type no worker runs, written straight to the table (only the list reads them):
 * `n` jobs of `tenant`, one a second apart ending `endAgoS` seconds ago, with the given states.
 */
async function insertRows(tenant: string, prefix: string, n: number, states: string[], endAgoS = 0): Promise<string[]> {
  const r = await h.pool.query<{ job_id: string }>(
    `INSERT INTO job_intents (job_id, tenant_id, job_type, input_hash, input, status, created_at, finished_at)
     SELECT $2 || lpad(i::text, 5, '0'), $1, 'summarize', 'h', '{}', s, c,
            CASE WHEN s IN ('succeeded', 'dead_lettered', 'cancelled') THEN c END
       FROM generate_series(1, $3::int) AS i,
            LATERAL (SELECT ($4::text[])[1 + (i - 1) % cardinality($4::text[])] AS s,
                            now() - ($5::int + $3::int - i) * interval '1 second' AS c) x
     RETURNING job_id`,
    [tenant, prefix, n, states, endAgoS],
  );
  return r.rows.map((x) => x.job_id);
}

/** Every page of a list, following nextCursor. */
async function allPages(path: string, tenant: 'a' | 'b' | null = 'a'): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const r = tenant
      ? await h.api(`${path}${cursor ? `${sep}cursor=${cursor}` : ''}`, { tenant })
      : await admin(`${path.replace('/v1/admin/jobs', '')}${cursor ? `${sep}cursor=${cursor}` : ''}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    pages.push(ids(r));
    cursor = r.body.nextCursor;
  } while (cursor);
  return pages;
}

describe('GET /v1/jobs: a tenant lists its own jobs', () => {
  it('filters by tag, type and state, shows what getJob shows and never the input, and never another tenant', async () => {
    const order = `ord-${uid()}`;
    const tagged = await h.api('/v1/jobs', {
      body: { type: 'summarize', input: { text: 'Tagged one.' }, tags: { order, team: 'billing' } },
      headers: { 'idempotency-key': `key-${uid()}` },
    });
    expect(tagged.status).toBe(202);
    const other = await h.submit('summarize', { text: 'Untagged one.' });
    // Tenant b uses the same tag: its job never appears in a's list, nor a's in b's.
    const foreign = await h.api('/v1/jobs', {
      body: { type: 'summarize', input: { text: 'Tenant b.' }, tags: { order } },
      headers: { 'idempotency-key': `key-${uid()}` },
      tenant: 'b',
    });
    await h.waitForStatus(tagged.body.jobId, 'succeeded');
    await h.waitForStatus(other.body.jobId, 'succeeded');

    const byTag = await h.api(`/v1/jobs?tag=order:${order}`);
    expect(byTag.status).toBe(200);
    expect(ids(byTag)).toEqual([tagged.body.jobId]);
    const own = (await h.api(`/v1/jobs/${tagged.body.jobId}`)).body;
    expect(byTag.body.jobs[0]).toMatchObject({
      jobId: own.jobId,
      status: 'succeeded',
      type: 'summarize',
      tags: { order, team: 'billing' },
    });
    expect(byTag.body.jobs[0].result).toEqual(own.result);
    expect(byTag.body.jobs[0]).not.toHaveProperty('input');
    expect(byTag.body).not.toHaveProperty('nextCursor');
    expect(ids(await h.api(`/v1/jobs?tag=order:${order}`, { tenant: 'b' }))).toEqual([foreign.body.jobId]);
    expect(ids(await h.api(`/v1/jobs?tag=order:${order}&state=running,queued`))).toEqual([]);
    expect(ids(await h.api(`/v1/jobs?tag=team:billing&state=succeeded&type=summarize`))).toEqual([tagged.body.jobId]);

    // The whole list of tenant a, every page: its own jobs only.
    const all = (await allPages('/v1/jobs?limit=200')).flat();
    expect(all).toContain(tagged.body.jobId);
    expect(all).toContain(other.body.jobId);
    expect(all).not.toContain(foreign.body.jobId);
    // Another tenant's job by ID reads as absent, as ever.
    expect((await h.api(`/v1/jobs/${foreign.body.jobId}`)).status).toBe(404);
  });

  it('pages newest first by keyset: no job twice or missed, and jobs inserted meanwhile do not shift later pages', async () => {
    const p = `job-page-${uid()}-`;
    // 25 jobs in the same second range as nothing else: filter them by a created range.
    const rows = await insertRows(TENANTS.a.id, p, 25, ['succeeded', 'dead_lettered', 'queued'], 3_600);
    const from = (await h.pool.query(`SELECT min(created_at) AS t FROM job_intents WHERE job_id LIKE $1`, [`${p}%`])).rows[0].t as Date;
    const to = new Date(from.getTime() + 25_000);
    const range = `createdAfter=${from.toISOString()}&createdBefore=${to.toISOString()}`;
    const first = await h.api(`/v1/jobs?${range}&limit=10`);
    expect(ids(first)).toEqual(rows.slice(15).reverse());
    // Three jobs arrive inside the range, newer than every listed one: with OFFSET the next page
    // would repeat three; by keyset it starts after the last row seen.
    await h.pool.query(
      `INSERT INTO job_intents (job_id, tenant_id, job_type, input_hash, input, created_at)
       SELECT $1 || i, $2, 'summarize', 'h', '{}', $3::timestamptz + interval '24.5 seconds' FROM generate_series(1, 3) i`,
      [`${p}new-`, TENANTS.a.id, from],
    );
    expect(ids(await h.api(`/v1/jobs?${range}&limit=3`))).toEqual([3, 2, 1].map((i) => `${p}new-${i}`));
    const second = await h.api(`/v1/jobs?${range}&limit=10&cursor=${first.body.nextCursor}`);
    expect(ids(second)).toEqual(rows.slice(5, 15).reverse());
    const third = await h.api(`/v1/jobs?${range}&limit=10&cursor=${second.body.nextCursor}`);
    expect(ids(third)).toEqual(rows.slice(0, 5).reverse());
    expect(third.body).not.toHaveProperty('nextCursor');
    // Several states at once, repeated or comma-separated: the same answer.
    const two = (await allPages(`/v1/jobs?${range}&state=succeeded&state=dead_lettered&limit=4`)).flat();
    expect(two).toEqual(rows.filter((_, i) => i % 3 !== 2).reverse());
    expect((await allPages(`/v1/jobs?${range}&state=succeeded,dead_lettered&limit=7`)).flat()).toEqual(two);
    // Jobs created in the same microsecond are told apart by their ID: none lost at a page boundary.
    const q = `job-same-${uid()}-`;
    await h.pool.query(
      `INSERT INTO job_intents (job_id, tenant_id, job_type, input_hash, input, created_at)
       SELECT $1 || i, $2, 'summarize', 'h', '{}', '2001-01-01T00:00:00.123456Z' FROM generate_series(1, 7) i`,
      [q, TENANTS.a.id],
    );
    const same = await allPages(`/v1/jobs?createdBefore=2001-01-02T00:00:00Z&limit=3`);
    expect(same.map((x) => x.length)).toEqual([3, 3, 1]);
    expect(same.flat()).toEqual([7, 6, 5, 4, 3, 2, 1].map((i) => `${q}${i}`));
  });

  it('answers a bad filter with a 400 problem naming the parameter, and a cursor of another list too', async () => {
    const cases: Array<[string, string]> = [
      ['state=nope', 'state'],
      ['state=queued,bogus', 'state'],
      ['type=nope', 'type'],
      ['createdAfter=yesterday', 'createdAfter'],
      ['createdAfter=2030-01-02T00:00:00Z&createdBefore=2030-01-01T00:00:00Z', 'createdAfter'],
      ['tag=novalue', 'tag'],
      ['tag=bad key:x', 'tag'],
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['limit=ten', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
      ['tenantId=tenant-b', 'tenantId'],
      ['offset=50', 'offset'],
    ];
    for (const [q, path] of cases) {
      const r = await h.api(`/v1/jobs?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.headers.get('content-type'), q).toMatch(/application\/problem\+json/);
      expect(r.body.type).toBe('urn:durable-jobs:problem:validation-error');
      expect(
        r.body.errors.map((e: { path: string }) => e.path),
        q,
      ).toContain(path);
    }
    await insertRows(TENANTS.b.id, `job-b-${uid()}-`, 3, ['succeeded']);
    await insertRows(TENANTS.a.id, `job-a-${uid()}-`, 3, ['succeeded']);
    const ofB = (await h.api('/v1/jobs?limit=1', { tenant: 'b' })).body.nextCursor as string;
    const ofA = (await h.api('/v1/jobs?limit=1&state=succeeded')).body.nextCursor as string;
    expect(ofB).toBeTruthy();
    // Tenant b's cursor in tenant a's list, or a's with another filter: refused, nothing listed.
    for (const [q, tenant] of [
      [`cursor=${ofB}`, 'a'],
      [`cursor=${ofA}&state=queued`, 'a'],
      [`cursor=${ofA}&state=succeeded`, 'b'],
    ] as const) {
      const r = await h.api(`/v1/jobs?${q}`, { tenant });
      expect(r.status, q).toBe(400);
      expect(r.body.errors).toEqual([{ path: 'cursor', message: expect.stringContaining('another list') }]);
    }
    // A forged cursor (a position edited by hand) is refused the same way when its list does not match.
    const forged = Buffer.from(JSON.stringify({ v: 1, at: '0', id: 'x', q: 'forged' })).toString('base64url');
    expect((await h.api(`/v1/jobs?cursor=${forged}`)).status).toBe(400);
    expect((await h.api('/v1/jobs', { tenant: null })).status).toBe(401);
  });
});

describe('the OpenAPI document', () => {
  it('describes GET /v1/jobs with its filters and page, and the submit terms', async () => {
    const doc = (await (await fetch(`${h.opsUrl}/openapi.json`)).json()) as any;
    const get = doc.paths['/v1/jobs'].get;
    expect(get.parameters.map((p: { name: string }) => p.name)).toEqual([
      'state',
      'type',
      'createdAfter',
      'createdBefore',
      'tag',
      'limit',
      'cursor',
    ]);
    expect(get.parameters[0].schema.items.enum).toContain('scheduled');
    expect(get.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/JobPage');
    expect(Object.keys(get.responses)).toEqual(expect.arrayContaining(['200', '400', '401']));
    expect(doc.paths['/v1/admin/jobs'].get.parameters.map((p: { name: string }) => p.name)).toContain('cursor');
    expect(Object.keys(doc.components.schemas.SubmitJob.properties)).toEqual(expect.arrayContaining(['runAt', 'delaySeconds', 'tags']));
    expect(doc.components.schemas.JobStatus.properties).toHaveProperty('scheduledFor');
  });
});

describe('listJobs in the typed client', () => {
  it('lists like the API, with typed filters, and throws ValidationError naming a bad one', async () => {
    const tag = `c-${uid()}`;
    const r = await h.jobs.submitJob({
      tenantId: TENANTS.a.id,
      type: 'summarize',
      idempotencyKey: `key-${uid()}`,
      input: { text: 'Through the client.' },
      tags: { batch: tag },
    });
    const page = await h.jobs.listJobs(TENANTS.a.id, { tag: `batch:${tag}`, state: ['queued', 'running', 'succeeded', 'retrying'] });
    expect(page.jobs.map((j) => j.jobId)).toEqual([r.jobId]);
    expect(page.jobs[0]!.tags).toEqual({ batch: tag });
    expect((await h.jobs.listJobs(TENANTS.b.id, { tag: `batch:${tag}` })).jobs).toEqual([]);
    const createdAfter = new Date(Date.now() - 60_000);
    const since = await h.jobs.listJobs(TENANTS.a.id, { createdAfter, limit: 1 });
    expect(since.jobs).toHaveLength(1);
    expect(since.nextCursor).toBeTruthy();
    const next = await h.jobs.listJobs(TENANTS.a.id, { createdAfter: createdAfter.toISOString(), limit: 1, cursor: since.nextCursor });
    expect(next.jobs).toHaveLength(1);
    expect(next.jobs[0]!.jobId).not.toBe(since.jobs[0]!.jobId);
    await expect(h.jobs.listJobs(TENANTS.a.id, { state: 'nope' as never })).rejects.toThrow(ValidationError);
    const err = await h.jobs.listJobs(TENANTS.a.id, { limit: 500 }).catch((e: ValidationError) => e);
    expect((err as ValidationError).fields.map((f) => f.path)).toEqual(['limit']);
    await h.waitForStatus(r.jobId, 'succeeded');
  });
});

describe('GET /v1/admin/jobs: operators across tenants', () => {
  it('pages across tenants by keyset, filters by tenant, and refuses a tenant cursor', async () => {
    const p = `job-adm-${uid()}-`;
    const a = await insertRows(TENANTS.a.id, `${p}a-`, 4, ['succeeded'], 7_200);
    const b = await insertRows(TENANTS.b.id, `${p}b-`, 4, ['succeeded'], 7_200);
    const from = (await h.pool.query(`SELECT min(created_at) AS t FROM job_intents WHERE job_id LIKE $1`, [`${p}%`])).rows[0].t as Date;
    const range = `createdAfter=${from.toISOString()}&createdBefore=${new Date(from.getTime() + 4_000).toISOString()}`;
    const pages = await allPages(`/v1/admin/jobs?${range}&limit=3`, null);
    expect(pages.map((x) => x.length)).toEqual([3, 3, 2]);
    // Each second holds one job of each tenant, b's inserted a moment after a's: newest first.
    expect(pages.flat()).toEqual([3, 2, 1, 0].flatMap((i) => [b[i], a[i]]));
    const onlyB = await admin(`?${range}&tenantId=${TENANTS.b.id}`);
    expect(ids(onlyB)).toEqual([...b].reverse());
    expect(onlyB.body.jobs[0].tenantId).toBe(TENANTS.b.id);
    const tenantCursor = (await h.api(`/v1/jobs?${range}&limit=1`)).body.nextCursor;
    const r = await admin(`?${range}&cursor=${tenantCursor}`);
    expect(r.status).toBe(400);
    expect(r.body.errors[0].path).toBe('cursor');
  });
});

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The real CLI (`npm run job -- list` runs exactly this), against this file's API. */
async function jobCli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/job.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DJ_API_URL: h.baseUrl, ADMIN_API_KEY: ADMIN_KEY },
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('npm run job -- list', () => {
  it("prints a page across tenants and the command for the next one, and passes the API's 400 through", async () => {
    const p = `job-cli-${uid()}-`;
    const rows = await insertRows(TENANTS.b.id, p, 3, ['succeeded', 'dead_lettered', 'succeeded'], 10_800);
    const from = (await h.pool.query(`SELECT min(created_at) AS t FROM job_intents WHERE job_id LIKE $1`, [`${p}%`])).rows[0].t as Date;
    const range = ['--created-after', from.toISOString(), '--created-before', new Date(from.getTime() + 3_000).toISOString()];
    const first = await jobCli('list', '--tenant', TENANTS.b.id, '--state', 'succeeded', ...range, '--limit', '1');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^JOB\s+TENANT\s+TYPE\s+STATUS\s+ATTEMPTS\s+CREATED \(UTC\)/);
    expect(first.stdout).toContain(rows[2]);
    expect(first.stdout).not.toContain(rows[0]);
    const next = /next page: npm run job -- (list .*)$/m.exec(first.stdout)?.[1];
    expect(next).toContain(`--tenant ${TENANTS.b.id} --state succeeded`);
    // Run the printed command as a shell would split it (its values here need no quotes).
    const second = await jobCli(...next!.split(' '));
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain(rows[0]);
    expect(second.stdout).not.toContain('next page');
    const json = await jobCli('list', '--tenant', TENANTS.b.id, ...range, '--state', 'dead_lettered', '--json');
    expect(JSON.parse(json.stdout).jobs.map((j: { jobId: string }) => j.jobId)).toEqual([rows[1]]);
    const bad = await jobCli('list', '--state', 'nope');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/400 Invalid request: invalid list filter \(state: one or more of scheduled, queued/);
    const usage = await jobCli('list', '--offset', '5');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('unknown option --offset');
  });
});
