import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { operatorKey, startHarness, uid, WEBHOOK_SECRET, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('unstorable', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

const count = async () => (await h.pool.query('SELECT count(*)::int AS n FROM job_intents')).rows[0].n as number;

describe('text Postgres cannot store', () => {
  it('refuses a NUL character or a lone surrogate in the input with a precise 400, writing nothing', async () => {
    const before = await count();
    for (const text of ['a\u0000b', 'lone \ud800 surrogate', 'lone \udc00 low']) {
      const r = await h.submit('summarize', { text });
      expect(r.status).toBe(400);
      expect(r.body.errors).toEqual([{ path: 'input.text', message: expect.stringContaining('NUL') }]);
    }
    // A proper surrogate pair (an emoji) is fine.
    const ok = await h.submit('summarize', { text: 'fine 😀' }, { key: `emoji-${uid()}` });
    expect(ok.status).toBe(202);
    expect(await count()).toBe(before + 1);
  });

  it('answers 400, not 500, for a NUL in a path ID', async () => {
    expect((await h.api('/v1/jobs/job-%00')).status).toBe(400);
    expect((await h.api('/v1/jobs/job-%00/cancel', { method: 'POST' })).status).toBe(400);
  });

  it('answers 400 with a problem, not 500, for a NUL or a lone surrogate in an admin query string or body string (F8)', async () => {
    const alice = { authorization: `Bearer ${operatorKey('alice')}` };
    const cases: { path: string; method?: string; body?: unknown; field: string }[] = [
      { path: '/v1/dead-letters?tenantId=%00', field: 'tenantId' },
      { path: '/v1/admin/jobs?tenantId=%00x', field: 'tenantId' },
      { path: '/v1/dead-letters/replay', body: { ids: ['dl-\u0000'], dryRun: true }, field: 'ids.0' },
      { path: '/v1/dead-letters/replay', body: { filter: { tenantId: 'a\u0000' }, dryRun: true }, field: 'filter.tenantId' },
      { path: '/v1/admin/degradation', method: 'PUT', body: { pausedPriorities: [], reason: 'x\u0000y' }, field: 'reason' },
      { path: '/v1/admin/degradation', method: 'PUT', body: { pausedPriorities: [], reason: 'lone \ud800' }, field: 'reason' },
      { path: '/v1/admin/outbox/1/discard', body: { reason: 'x\u0000y' }, field: 'reason' },
    ];
    for (const c of cases) {
      const r = await h.api(c.path, { method: c.method, body: c.body, tenant: null, headers: alice });
      expect({ case: c.path, status: r.status, type: r.headers.get('content-type') }).toEqual({
        case: c.path,
        status: 400,
        type: expect.stringContaining('application/problem+json'),
      });
      expect(r.body.type).toBe('urn:durable-jobs:problem:validation-error');
      expect(r.body.errors).toEqual([{ path: c.field, message: expect.stringContaining('NUL') }]);
    }
    // Nothing was changed: the degradation setting kept no reason with a NUL in it.
    const audit = await h.pool.query("SELECT count(*)::int AS n FROM degradation_audit WHERE reason LIKE '%x%y%'");
    expect(audit.rows[0].n).toBe(0);
  });

  it('answers 400, not 500, to a validly signed webhook whose event Postgres could not store', async () => {
    const id = `msg_${uid()}`;
    const body = JSON.stringify({ type: 'transcription.completed', data: { id: 'tr_x', status: 'completed', text: 'nul \u0000 inside' } });
    const ts = new Date();
    const r = await fetch(`${h.baseUrl}/v1/webhooks/sim`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(ts.getTime() / 1000)),
        'webhook-signature': new Webhook(WEBHOOK_SECRET).sign(id, ts, body),
      },
      body,
    });
    expect(r.status).toBe(400);
    const rows = await h.pool.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1', [id]);
    expect(rows.rows[0].n).toBe(0);
  });
});
