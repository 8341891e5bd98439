import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, uid, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('intake');
});
afterAll(async () => {
  await h?.close();
});

const text = { text: 'Durable intake first. Then the job ID.' };

describe('POST /v1/jobs: a new intent', () => {
  it('answers 202 with the job ID, Location and Retry-After, and the job succeeds end to end', async () => {
    const key = `order-${uid()}-summary`;
    const r = await h.submit('summarize', text, { key });
    expect(r.status).toBe(202);
    expect(r.body.jobId).toMatch(/^job-[0-9a-f]{32}$/);
    expect(r.body.jobId).not.toContain(key);
    expect(r.body.statusUrl).toBe(`/v1/jobs/${r.body.jobId}`);
    expect(r.headers.get('location')).toBe(r.body.statusUrl);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.result.summary).toBe('Durable intake first.');
    expect(done.result.providerId).toMatch(/^sum_/);
    expect(done.attempts).toBe(1);
    // The workflow ID is the job ID, and the Web UI can filter it by tenant, type and state.
    // (The job row turns succeeded a moment before the workflow closes: wait for its result.)
    await h.temporal.workflow.getHandle(r.body.jobId).result();
    const desc = await h.temporal.workflow.getHandle(r.body.jobId).describe();
    expect(desc.status.name).toBe('COMPLETED');
    expect(desc.searchAttributes).toMatchObject({ TenantId: ['tenant-a'], JobType: ['summarize'], JobState: ['succeeded'] });
    expect(JSON.stringify(desc.searchAttributes)).not.toContain(key);
  });
});

describe('POST /v1/jobs: the same intent again', () => {
  it('answers 200 with the same job ID and Idempotent-Replayed, and starts nothing new', async () => {
    const key = `k-${uid()}`;
    const first = await h.submit('summarize', text, { key });
    const again = await h.submit('summarize', { ...text }, { key });
    expect(first.status).toBe(202);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.jobId).toBe(first.body.jobId);
    await h.waitForStatus(first.body.jobId, 'succeeded');
    const afterDone = await h.submit('summarize', text, { key });
    expect(afterDone.status).toBe(200);
    expect(afterDone.body.status).toBe('succeeded');
    // A finished job's status will not change: nothing tells the client to poll again.
    expect(afterDone.headers.get('retry-after')).toBeNull();
    expect(afterDone.body).not.toHaveProperty('retryAfterSeconds');
    const effects = await h.simEffects();
    expect(effects.byKey[`${first.body.jobId}:summarize`].applied).toBe(1);
  });

  it('tells the duplicate of an unfinished job when to poll, as the first answer did', async () => {
    // The upstream holds its answer, so the job is certainly unfinished when the duplicate arrives.
    await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 3_000 });
    const key = `k-${uid()}`;
    const first = await h.submit('summarize', text, { key });
    const again = await h.submit('summarize', text, { key });
    expect(again.status).toBe(200);
    expect(['queued', 'running', 'retrying']).toContain(again.body.status);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(again.body.retryAfterSeconds).toBeGreaterThan(0);
    await h.waitForStatus(first.body.jobId, 'succeeded');
  });

  it('yields exactly one job for 20 concurrent duplicates', async () => {
    const key = `k-${uid()}`;
    const rs = await Promise.all(Array.from({ length: 20 }, () => h.submit('summarize', text, { key })));
    const ids = new Set(rs.map((r) => r.body.jobId));
    expect(ids.size).toBe(1);
    expect(rs.filter((r) => r.status === 202)).toHaveLength(1);
    expect(rs.filter((r) => r.status === 200)).toHaveLength(19);
    const [jobId] = [...ids] as [string];
    await h.waitForStatus(jobId, 'succeeded');
    const rows = await h.pool.query('SELECT count(*)::int AS n FROM job_intents WHERE job_id = $1', [jobId]);
    expect(rows.rows[0].n).toBe(1);
    const effects = await h.simEffects();
    expect(effects.byKey[`${jobId}:summarize`].applied).toBe(1);
  });

  it('refuses the same key with a different input or type with 422, starting nothing', async () => {
    const key = `k-${uid()}`;
    const first = await h.submit('summarize', text, { key });
    const changed = await h.submit('summarize', { text: 'another text' }, { key });
    expect(changed.status).toBe(422);
    expect(changed.headers.get('content-type')).toContain('application/problem+json');
    expect(changed.body.type).toBe('urn:durable-jobs:problem:idempotency-key-reused');
    const otherType = await h.submit(
      'purchase',
      { amountCents: 100, currency: 'EUR', customer: 'c1', receiptEmail: 'r@example.com' },
      { key },
    );
    expect(otherType.status).toBe(422);
    const rows = await h.pool.query('SELECT job_id FROM job_intents WHERE tenant_id = $1 AND job_type = $2 AND input_hash IS NOT NULL', [
      'tenant-a',
      'purchase',
    ]);
    expect(rows.rows.map((r) => r.job_id)).not.toContain(otherType.body.jobId);
    await h.waitForStatus(first.body.jobId, 'succeeded');
  });
});

describe('tenants', () => {
  it('answers 401 without a key or with a wrong one', async () => {
    const none = await h.api('/v1/jobs', {
      body: { type: 'summarize', input: text },
      headers: { 'idempotency-key': `k-${uid()}` },
      tenant: null,
    });
    expect(none.status).toBe(401);
    expect(none.body.type).toBe('urn:durable-jobs:problem:unauthorized');
    const wrong = await h.api('/v1/jobs', {
      body: { type: 'summarize', input: text },
      headers: { 'idempotency-key': `k-${uid()}`, authorization: 'Bearer nope-nope-nope' },
      tenant: null,
    });
    expect(wrong.status).toBe(401);
    const get = await h.api('/v1/jobs/job-0000', { tenant: null });
    expect(get.status).toBe(401);
  });

  it("never shows one tenant's job to another (404 as if absent), and the same key is independent per tenant", async () => {
    const key = `shared-${uid()}`;
    const a = await h.submit('summarize', text, { key, tenant: 'a' });
    const b = await h.submit('summarize', { text: 'tenant b text' }, { key, tenant: 'b' });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.jobId).not.toBe(a.body.jobId);
    const peek = await h.api(`/v1/jobs/${a.body.jobId}`, { tenant: 'b' });
    expect(peek.status).toBe(404);
    const cancel = await h.api(`/v1/jobs/${a.body.jobId}/cancel`, { method: 'POST', tenant: 'b' });
    expect(cancel.status).toBe(404);
    const unknown = await h.api('/v1/jobs/job-does-not-exist');
    expect(unknown.status).toBe(404);
    await h.waitForStatus(a.body.jobId, 'succeeded', 'a');
    await h.waitForStatus(b.body.jobId, 'succeeded', 'b');
  });
});

describe('bad input: a precise problem and nothing written', () => {
  async function countIntents(): Promise<number> {
    return (await h.pool.query('SELECT count(*)::int AS n FROM job_intents')).rows[0].n;
  }

  it.each([
    ['missing key', undefined],
    ['too short key', 'short'],
    ['key with a space', 'has a space in it'],
    ['key over 255 characters', 'x'.repeat(256)],
    ['non-ASCII key', 'clé-unique-123'],
  ])('400 for a %s', async (_name, key) => {
    const before = await countIntents();
    const headers: Record<string, string> = key === undefined ? {} : { 'idempotency-key': key };
    const r = await h.api('/v1/jobs', { body: { type: 'summarize', input: text }, headers });
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(r.body.type).toBe('urn:durable-jobs:problem:validation-error');
    expect(r.body.errors[0].path).toBe('Idempotency-Key');
    expect(await countIntents()).toBe(before);
  });

  it('400 for an unknown type, naming the field and the allowed types', async () => {
    const r = await h.submit('resize-image', {});
    expect(r.status).toBe(400);
    expect(r.body.errors).toEqual([{ path: 'type', message: expect.stringContaining('summarize') }]);
  });

  it('400 for invalid input, naming each offending field', async () => {
    const r = await h.submit('summarize', { text: '', notifyEmail: 'not-an-email', extra: 1 });
    expect(r.status).toBe(400);
    const paths = r.body.errors.map((e: { path: string }) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['input.text', 'input.notifyEmail']));
    const purchase = await h.submit('purchase', { amountCents: -5, currency: 'euro', customer: 'c', receiptEmail: 'x@y.zz' });
    expect(purchase.status).toBe(400);
    expect(purchase.body.errors.map((e: { path: string }) => e.path)).toEqual(
      expect.arrayContaining(['input.amountCents', 'input.currency']),
    );
  });

  it('400 for a body of the wrong shape and for text over 100000 characters', async () => {
    const noInput = await h.api('/v1/jobs', { body: { type: 'summarize' }, headers: { 'idempotency-key': `k-${uid()}` } });
    expect(noInput.status).toBe(400);
    expect(noInput.body.errors[0].path).toBe('input');
    const tooLong = await h.submit('summarize', { text: 'a'.repeat(100_001) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.errors[0].path).toBe('input.text');
  });

  it('400 for malformed JSON, 415 for another content type, 413 over 256 KiB', async () => {
    const before = await countIntents();
    const bad = await h.api('/v1/jobs', {
      rawBody: '{"type": "summarize", ',
      headers: { 'idempotency-key': `k-${uid()}`, 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.type).toBe('urn:durable-jobs:problem:malformed-json');
    const form = await h.api('/v1/jobs', {
      rawBody: 'type=summarize',
      headers: { 'idempotency-key': `k-${uid()}`, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    // Plain text too (F12): Fastify's own text parser made it a 400 validation error.
    for (const type of ['text/plain', 'text/plain; charset=utf-8']) {
      const text = await h.api('/v1/jobs', {
        rawBody: JSON.stringify({ type: 'summarize', input: { text: 'sent as text' } }),
        headers: { 'idempotency-key': `k-${uid()}`, 'content-type': type },
      });
      expect(text.status, type).toBe(415);
      expect(text.body.type, type).toBe('urn:durable-jobs:problem:unsupported-media-type');
    }
    const big = await h.api('/v1/jobs', {
      rawBody: JSON.stringify({ type: 'summarize', input: { text: 'a'.repeat(300 * 1024) } }),
      headers: { 'idempotency-key': `k-${uid()}`, 'content-type': 'application/json' },
    });
    expect(big.status).toBe(413);
    expect(big.body.type).toBe('urn:durable-jobs:problem:payload-too-large');
    const deep = await h.api('/v1/jobs', {
      rawBody: `{"type":"summarize","input":{"text":"x","n":${'['.repeat(5_000)}${']'.repeat(5_000)}}}`,
      headers: { 'idempotency-key': `k-${uid()}`, 'content-type': 'application/json' },
    });
    expect(deep.status).toBe(400);
    expect(deep.body).toMatchObject({ type: 'urn:durable-jobs:problem:malformed-json', detail: expect.stringContaining('deeper than 64') });
    expect(await countIntents()).toBe(before);
  });
});

/** Sends raw bytes on a fresh TCP connection and reads the whole answer (the server closes it). */
function rawRequest(baseUrl: string, bytes: Buffer): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(bytes));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

describe('bytes that Node refuses before any route', () => {
  it.each([
    ['NUL', '\x00'],
    ['CR', '\r'],
    ['LF', '\n'],
    ['DEL', '\x7f'],
    ['another control character (0x01)', '\x01'],
  ])('an Idempotency-Key with %s answers a 400 problem, writes nothing, and the API keeps serving', async (_name, ch) => {
    const before = (await h.pool.query('SELECT count(*)::int AS n FROM job_intents')).rows[0].n;
    const body = JSON.stringify({ type: 'summarize', input: text });
    const head =
      `POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer key-tenant-a\r\n` +
      `Idempotency-Key: order-${uid()}${ch}tail\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
    const answer = await rawRequest(h.baseUrl, Buffer.from(head + body, 'latin1'));
    const [statusLine, ...rest] = answer.split('\r\n');
    expect(statusLine).toBe('HTTP/1.1 400 Bad Request');
    const headers = rest.slice(0, rest.indexOf('')).map((l) => l.toLowerCase());
    expect(headers).toContain('content-type: application/problem+json');
    const problem = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(problem).toMatchObject({ type: 'urn:durable-jobs:problem:malformed-request', status: 400, title: expect.any(String) });
    expect((await h.pool.query('SELECT count(*)::int AS n FROM job_intents')).rows[0].n).toBe(before);
    // The server is still up: a normal request right after goes through.
    const ok = await h.submit('summarize', text);
    expect(ok.status).toBe(202);
  });
});

describe('operability', () => {
  it('serves /healthz, /readyz, /metrics and an OpenAPI document built from the request schemas', async () => {
    expect((await h.api('/healthz', { tenant: null })).status).toBe(200);
    const ready = await h.api('/readyz', { tenant: null });
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready' });
    // The reasons and the operational endpoints: on the admin listener (docs/security-limits.md).
    expect(await (await fetch(`${h.opsUrl}/readyz`)).json()).toMatchObject({ postgres: 'ok', temporal: 'ok' });
    const metrics = await fetch(`${h.opsUrl}/metrics`);
    expect(await metrics.text()).toContain('process_cpu_user_seconds_total');
    const doc = { body: (await (await fetch(`${h.opsUrl}/openapi.json`)).json()) as any };
    expect(doc.body.openapi).toBe('3.0.3');
    expect(doc.body.paths['/v1/jobs'].post.responses).toHaveProperty('422');
    expect(doc.body.components.schemas.summarizeInput.properties.text.maxLength).toBe(100000);
  });
});
