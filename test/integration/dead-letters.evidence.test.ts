import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getDeadLetter, insertDeadLetter, type DeadLetterRow } from '../../store/dead-letters.js';
import { ADMIN_KEY, startHarness, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('dl-evidence');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } });

const SECRET_EMAIL = 'jane.secret@example.com';

async function deadLettersOf(jobId: string): Promise<number> {
  const r = await h.pool.query('SELECT count(*)::int AS n FROM dead_letters WHERE job_id = $1', [jobId]);
  return r.rows[0].n;
}

/** Every evidence field the issue names, present and typed. */
function expectEvidence(d: any, jobId: string) {
  expect(d).toMatchObject({ jobId, tenantId: 'tenant-a', state: 'open', codeVersion: 'test', inputRef: `job_intents:${jobId}` });
  expect(d.id).toMatch(/^dl-[0-9a-f]{24}$/);
  expect(d.runId).toMatch(/^[0-9a-f-]{36}$/);
  expect(d.inputHash).toMatch(/^[0-9a-f]{64}$/);
  expect(typeof d.buildId).toBe('string');
  expect(Date.parse(d.firstFailureAt)).toBeLessThanOrEqual(Date.parse(d.lastFailureAt));
  expect(d.message).not.toContain(SECRET_EMAIL);
  expect(JSON.stringify(d)).not.toContain(SECRET_EMAIL);
}

describe('terminal failure → dead letter', () => {
  it('a 400 produces exactly one dead letter with every evidence field, visible on the job and in Temporal', async () => {
    await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
    const r = await h.submit('purchase', { amountCents: 1200, currency: 'EUR', customer: 'cus_ev1', receiptEmail: SECRET_EMAIL });
    const job = await h.waitForStatus(r.body.jobId, 'dead_lettered');
    expect(job.deadLetterId).toMatch(/^dl-/);
    expect(job.error).toMatchObject({ errorClass: 'invalid_request', statusCode: 400 });

    const d = await admin(`/v1/dead-letters/${job.deadLetterId}`);
    expect(d.status).toBe(200);
    expectEvidence(d.body, r.body.jobId);
    expect(d.body).toMatchObject({
      jobType: 'purchase',
      errorClass: 'invalid_request',
      statusCode: 400,
      errorType: 'NonRetryableError',
      failedStep: 'sendReceipt',
    });
    expect(d.body.attempts).toBe(2); // charge once, receipt once: a 400 is never retried
    // The job's own figure is its highest attempt, and its reason says nothing was retried.
    expect(job.attempts).toBe(1);
    expect(job.statusReason).toBe('invalid_request on the first attempt, not retried (NON_RETRYABLE_FAILURE)');
    expect(job.stage).toContain('not retried');
    expect(JSON.stringify(job)).not.toContain('after retries');
    expect(d.body.actions[0].details.reason).toBe(job.statusReason);
    // The charge's request ID (succeeded) and the refused receipt's (from the failure).
    expect(d.body.providerRequestIds.map((p: any) => [p.step, p.outcome])).toEqual([
      ['charge', 'succeeded'],
      ['receipt', 'failed'],
    ]);
    expect(d.body.providerRequestIds.every((p: any) => /^req_/.test(p.requestId))).toBe(true);
    expect(d.body.actions).toEqual([expect.objectContaining({ action: 'recorded', actor: 'system' })]);
    expect(await deadLettersOf(r.body.jobId)).toBe(1);

    // JobState=dead_lettered is searchable (visibility is eventually consistent).
    await waitFor('JobState search attribute', async () => {
      for await (const wf of h.temporal.workflow.list({ query: `WorkflowId='${r.body.jobId}' AND JobState='dead_lettered'` }))
        return wf.workflowId;
      return undefined;
    });
    // Listed for operators; the tenant key is not an admin key.
    const list = await admin('/v1/dead-letters?state=open');
    expect(list.body.deadLetters.map((x: any) => x.id)).toContain(job.deadLetterId);
    expect((await h.api('/v1/dead-letters')).status).toBe(401);
  });

  it('exhausted 503 retries produce exactly one dead letter with the attempt count and failure window', async () => {
    // 8 attempts (the shipped cap), each told to come back in 1 s: ~8 s in total.
    await h.simFault({ path: '/v1/summaries', times: 8, status: 503, retryAfter: '1' });
    const r = await h.submit('summarize', { text: `Please summarize this for ${SECRET_EMAIL}.` });
    const job = await h.waitForStatus(r.body.jobId, 'dead_lettered', 'a', 120_000);
    const d = await admin(`/v1/dead-letters/${job.deadLetterId}`);
    expectEvidence(d.body, r.body.jobId);
    expect(d.body).toMatchObject({
      jobType: 'summarize',
      errorClass: 'upstream_unavailable',
      statusCode: 503,
      errorType: 'RetryBudgetExhausted',
      failedStep: 'summarizeText',
      attempts: 8,
    });
    expect(d.body.message).toContain('attempt cap of 8');
    expect(job.statusReason).toBe('upstream_unavailable after 8 attempts, the retry budget spent (RetryBudgetExhausted)');
    expect(Date.parse(d.body.lastFailureAt) - Date.parse(d.body.firstFailureAt)).toBeGreaterThanOrEqual(6_000);
    expect(d.body.providerRequestIds).toEqual([expect.objectContaining({ step: 'summarize', outcome: 'failed' })]);
    expect(await deadLettersOf(r.body.jobId)).toBe(1);
  });

  it('recording the same failure again is a no-op (unique on job and run)', async () => {
    const { rows } = await h.pool.query<DeadLetterRow>('SELECT * FROM dead_letters ORDER BY created_at LIMIT 1');
    const first = rows[0]!;
    expect(await insertDeadLetter(h.pool, { ...first, message: 'a second recording' })).toBe(false);
    expect(await insertDeadLetter(h.pool, { ...first, id: 'dl-other-id-same-run', message: 'a second recording' })).toBe(false);
    expect(await deadLettersOf(first.job_id)).toBe(1);
    expect((await getDeadLetter(h.pool, first.id))!.message).toBe(first.message);
  });
});
