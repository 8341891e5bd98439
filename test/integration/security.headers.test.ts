// Response headers every API answer carries (issue 39 §4, F10): nosniff everywhere, and no
// cache may keep a job's status, a dead letter, an admin read or a freshly created key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorKey, startHarness, uid, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('security-headers', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

const admin = { tenant: null, headers: { authorization: `Bearer ${operatorKey('alice')}` } } as const;

describe('security headers', () => {
  it('mark every API answer nosniff and no-store: tenant, admin, problems and key creation', async () => {
    const submitted = await h.submit('summarize', { text: 'Headers, please.' });
    expect(submitted.status).toBe(202);
    const tenantId = `hdr-${uid()}`;
    expect((await h.api('/v1/admin/tenants', { ...admin, body: { id: tenantId } })).status).toBe(201);
    const answers = {
      submit: submitted,
      status: await h.api(`/v1/jobs/${submitted.body.jobId}`),
      unknownJob: await h.api('/v1/jobs/job-does-not-exist'),
      noKey: await h.api('/v1/jobs/job-x', { tenant: null }),
      deadLetters: await h.api('/v1/dead-letters', admin),
      adminJobs: await h.api('/v1/admin/jobs', admin),
      adminJob: await h.api(`/v1/admin/jobs/${submitted.body.jobId}`, admin),
      whoami: await h.api('/v1/admin/whoami', admin),
      degradation: await h.api('/v1/admin/degradation', admin),
      outbox: await h.api('/v1/admin/outbox', admin),
      tenants: await h.api('/v1/admin/tenants', admin),
      newKey: await h.api(`/v1/admin/tenants/${tenantId}/keys`, { ...admin, body: { name: 'second' } }),
      noRoute: await h.api('/v1/nothing-here'),
    };
    for (const [name, r] of Object.entries(answers)) {
      expect({ name, nosniff: r.headers.get('x-content-type-options'), cache: r.headers.get('cache-control') }).toEqual({
        name,
        nosniff: 'nosniff',
        cache: 'no-store',
      });
    }
    expect(answers.status.status).toBe(200);
    expect(answers.newKey.status).toBe(201);
  });

  it('keep the console its own caching (no-cache) and nosniff', async () => {
    const page = await fetch(`${h.baseUrl}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const health = await fetch(`${h.baseUrl}/healthz`);
    expect(health.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
