// Priority high is a tenant's entitlement, not its claim (issue 39 §2, F11): a tenant whose
// settings do not allow it hears 403 over HTTP and a PermissionError from the typed client,
// and nothing is written; an operator grants or withdraws it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PermissionError } from '../../lib/errors.js';
import { createTenantsAdmin } from '../../services/tenants.js';
import { operatorKey, startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('priority-entitlement', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

const alice = { tenant: null, headers: { authorization: `Bearer ${operatorKey('alice')}` } } as const;
const intents = async (tenantId: string) =>
  (await h.pool.query('SELECT count(*)::int AS n FROM job_intents WHERE tenant_id = $1', [tenantId])).rows[0].n as number;

describe('priority high', () => {
  it('is refused with a 403 problem naming the rule for a tenant not allowed it, writing nothing; other priorities pass', async () => {
    const before = await intents(TENANTS.b.id);
    const r = await h.submit('summarize', { text: 'Let me jump the queue.' }, { tenant: 'b', priority: 'high' });
    expect(r.status).toBe(403);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(r.body).toMatchObject({
      type: 'urn:durable-jobs:problem:priority-not-allowed',
      status: 403,
      detail: expect.stringContaining('may not submit priority high'),
    });
    expect(await intents(TENANTS.b.id)).toBe(before);
    expect((await h.submit('summarize', { text: 'Normal is fine.' }, { tenant: 'b' })).status).toBe(202);
    expect((await h.submit('summarize', { text: 'Low is fine.' }, { tenant: 'b', priority: 'low' })).status).toBe(202);
    // A seeded tenant granted high submits it.
    expect((await h.submit('summarize', { text: 'Allowed high.' }, { tenant: 'a', priority: 'high' })).status).toBe(202);
  });

  it('is refused by the typed client with a PermissionError, writing nothing', async () => {
    const before = await intents(TENANTS.b.id);
    const err = await h.jobs
      .submitJob({ tenantId: TENANTS.b.id, type: 'summarize', idempotencyKey: `k-${uid()}-high`, input: { text: 'x' }, priority: 'high' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermissionError);
    expect(await intents(TENANTS.b.id)).toBe(before);
  });

  it('is granted and withdrawn by an operator (PATCH /v1/admin/tenants/{id}), from the next submit on', async () => {
    const tenantId = `prio-${uid()}`;
    const tenants = createTenantsAdmin(h.pool);
    await tenants.createTenant(tenantId);
    const { key } = await tenants.addKey(tenantId, { name: 'main' });
    const submitHigh = () =>
      h.api('/v1/jobs', {
        tenant: null,
        body: { type: 'summarize', input: { text: 'high' }, priority: 'high' },
        headers: { authorization: `Bearer ${key}`, 'idempotency-key': `k-${uid()}-high` },
      });
    // A new tenant is not allowed by default.
    expect((await tenants.listTenants()).find((t) => t.id === tenantId)).toMatchObject({ mayUseHighPriority: false });
    expect((await submitHigh()).status).toBe(403);

    const granted = await h.api(`/v1/admin/tenants/${tenantId}`, { ...alice, method: 'PATCH', body: { mayUseHighPriority: true } });
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ id: tenantId, mayUseHighPriority: true });
    const row = await h.pool.query('SELECT high_priority_changed_by AS by FROM tenants WHERE id = $1', [tenantId]);
    expect(row.rows[0].by).toBe('alice');
    expect((await submitHigh()).status).toBe(202);

    expect((await h.api(`/v1/admin/tenants/${tenantId}`, { ...alice, method: 'PATCH', body: { mayUseHighPriority: false } })).status).toBe(
      200,
    );
    expect((await submitHigh()).status).toBe(403);

    // The route is admin-only and validates its body.
    expect((await h.api(`/v1/admin/tenants/${tenantId}`, { method: 'PATCH', body: { mayUseHighPriority: true } })).status).toBe(401);
    expect((await h.api(`/v1/admin/tenants/${tenantId}`, { ...alice, method: 'PATCH', body: { mayUseHighPriority: 'yes' } })).status).toBe(
      400,
    );
    expect(
      (await h.api(`/v1/admin/tenants/nobody-${uid()}`, { ...alice, method: 'PATCH', body: { mayUseHighPriority: true } })).status,
    ).toBe(404);
  });
});
