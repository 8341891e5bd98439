import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { builtInJobTypes, defaultJobRegistry } from '../../jobs/index.js';
import { durableJobsPlugin } from '../../server/index.js';
import { reserveAndConfirmJobType } from '../fixtures/jobs/reserve-and-confirm/activities.js';
import { ADMIN_KEYS, operatorKey, startHarness, TENANTS, type Harness } from '../support/harness.js';

// The fixture type is known only to this registry, which the test passes to the factories
// (intake, HTTP API, worker): nothing else in the repository names it.
const registry = createJobRegistry([...builtInJobTypes, reserveAndConfirmJobType]);

let h: Harness;
beforeAll(async () => {
  h = await startHarness('custom-type', { jobTypes: registry });
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('dana')}` } });
const order = (sku: string) => ({ sku, quantity: 3, customerEmail: 'buyer@example.com' });

describe('a job type defined outside the product, registered in one line', () => {
  it('is validated by its own schema and documented in the OpenAPI document', async () => {
    const bad = await h.submit('reserve-and-confirm', { sku: 'nope!', quantity: 3, customerEmail: 'buyer@example.com' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ path: 'input.sku', message: 'sku must be 3-40 of A-Z, 0-9 and -' }]);
    const doc = (await (await fetch(`${h.opsUrl}/openapi.json`)).json()) as any;
    expect(doc.components.schemas['reserve-and-confirmInput']).toMatchObject({
      properties: { sku: { type: 'string' }, quantity: { type: 'integer' } },
      description: expect.stringContaining('Effect steps: reserve, confirm'),
    });
  });

  it('runs end to end over HTTP with one effect key per step, each applied once', async () => {
    const r = await h.submit('reserve-and-confirm', order('SKU-1'));
    expect(r.status).toBe(202);
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done).toMatchObject({ type: 'reserve-and-confirm', attempts: 1, result: { reservationId: expect.stringMatching(/^ch_/) } });
    const ledger = (await h.simEffects()).byKey;
    expect(ledger[`${r.body.jobId}:reserve`]).toMatchObject({ applied: 1, requests: 1 });
    expect(ledger[`${r.body.jobId}:confirm`]).toMatchObject({ applied: 1, requests: 1 });
    const rows = await h.pool.query('SELECT effect_key, state FROM effects WHERE job_id = $1 ORDER BY effect_key', [r.body.jobId]);
    expect(rows.rows).toEqual([
      { effect_key: `${r.body.jobId}:confirm`, state: 'succeeded' },
      { effect_key: `${r.body.jobId}:reserve`, state: 'succeeded' },
    ]);
    // Visible in the Web UI under its own type, with its definition's description.
    const d = await h.temporal.workflow.getHandle(r.body.jobId).describe();
    expect(d.type).toBe('reserveAndConfirmJob');
    expect(d.typedSearchAttributes.get({ name: 'JobType', type: 'KEYWORD' } as never)).toBe('reserve-and-confirm');
  });

  it('dead-letters on a 400, lists both steps in the dry run, and replays reusing the first effect', async () => {
    await h.simFault({ path: '/v1/notifications', times: 1, status: 400 });
    const r = await h.submit('reserve-and-confirm', order('SKU-2'));
    const failed = await h.waitForStatus(r.body.jobId, 'dead_lettered');
    const jobId = r.body.jobId as string;
    expect((await h.simEffects()).byKey[`${jobId}:confirm`]).toMatchObject({ applied: 0, requests: 1 });

    const dry = await admin('/v1/dead-letters/replay', { body: { ids: [failed.deadLetterId], dryRun: true } });
    expect(dry.status).toBe(200);
    expect(dry.body.deadLetters[0].effects).toEqual([
      expect.objectContaining({ step: 'reserve', effectKey: `${jobId}:reserve`, action: 'reuse', state: 'succeeded' }),
      expect.objectContaining({ step: 'confirm', effectKey: `${jobId}:confirm`, action: 'execute', state: 'failed' }),
    ]);

    const replay = await admin('/v1/dead-letters/replay', { body: { ids: [failed.deadLetterId] } });
    expect(replay.status).toBe(202);
    const progress = await h.waitForReplay(replay.body.replayId);
    expect(progress.counts.succeeded).toBe(1);
    const replayJob = (await h.api(`/v1/jobs/${jobId}-replay-1`)).body;
    expect(replayJob).toMatchObject({ status: 'succeeded', type: 'reserve-and-confirm', replayOf: jobId });
    const ledger = (await h.simEffects()).byKey;
    expect(ledger[`${jobId}:reserve`]).toMatchObject({ applied: 1, requests: 1 }); // reused: not asked again
    expect(ledger[`${jobId}:confirm`]).toMatchObject({ applied: 1 });
  });

  it('is refused for replay (409, naming the type) by an API whose registry lacks it, mounted under a prefix in a team app', async () => {
    await h.simFault({ path: '/v1/notifications', times: 1, status: 400 });
    const r = await h.submit('reserve-and-confirm', order('SKU-3'));
    const failed = await h.waitForStatus(r.body.jobId, 'dead_lettered');
    // A team's own Fastify app with the shipped types only, durable-jobs mounted under /jobs.
    const team = Fastify();
    team.get('/', async () => ({ team: 'app' }));
    await team.register(durableJobsPlugin, {
      prefix: '/jobs',
      jobs: defaultJobRegistry,
      pool: h.pool,
      temporal: h.temporal,
      taskQueue: h.taskQueue,
      adminKeys: ADMIN_KEYS,
    });
    try {
      const auth = { authorization: `Bearer ${operatorKey('dana')}`, 'content-type': 'application/json' };
      expect((await team.inject({ method: 'GET', url: '/' })).json()).toEqual({ team: 'app' });
      expect((await team.inject({ method: 'GET', url: '/jobs/readyz' })).statusCode).toBe(200);
      const page = await team.inject({ method: 'GET', url: '/jobs/console' });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('src="console/console.js"'); // relative: served under the prefix
      expect((await team.inject({ method: 'GET', url: '/jobs/console/console.js' })).statusCode).toBe(200);
      for (const dryRun of [true, false]) {
        const res = await team.inject({
          method: 'POST',
          url: '/jobs/v1/dead-letters/replay',
          headers: auth,
          payload: { ids: [failed.deadLetterId], dryRun },
        });
        expect(res.statusCode, res.body).toBe(409);
        expect(res.json()).toMatchObject({
          type: expect.stringContaining('job-type-unknown'),
          detail: expect.stringContaining('reserve-and-confirm'),
          jobTypes: ['reserve-and-confirm'],
        });
      }
      // Nothing was written: the dead letter is still open, with no replay action.
      const dl = await h.pool.query(
        `SELECT d.state, (SELECT count(*)::int FROM dead_letter_actions a WHERE a.dead_letter_id = d.id AND a.action LIKE 'replay%') AS replays
           FROM dead_letters d WHERE d.id = $1`,
        [failed.deadLetterId],
      );
      expect(dl.rows[0]).toEqual({ state: 'open', replays: 0 });
      // The unknown type at the intake of that API: 400 listing the types it knows.
      const bad = await team.inject({
        method: 'POST',
        url: '/jobs/v1/jobs',
        headers: {
          authorization: `Bearer ${TENANTS.a.key}`,
          'idempotency-key': 'custom-type-unknown-1',
          'content-type': 'application/json',
        },
        payload: { type: 'reserve-and-confirm', input: order('SKU-4') },
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().errors).toEqual([{ path: 'type', message: expect.stringContaining('summarize, purchase, transcribe, digest') }]);
    } finally {
      await team.close();
    }
  });
});
