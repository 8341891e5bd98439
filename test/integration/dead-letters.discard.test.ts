import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeadLetterActivities } from '../../activities/dead-letters.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { operatorKey, startHarness, uid, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('dl-discard');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('carol')}` } });

async function deadLettered(): Promise<{ jobId: string; deadLetterId: string }> {
  await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
  const r = await h.submit('purchase', { amountCents: 300, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'x@example.com' });
  return { jobId: r.body.jobId, deadLetterId: (await h.waitForStatus(r.body.jobId, 'dead_lettered')).deadLetterId };
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The real CLI (`npm run dlq` runs exactly this), against this file's API. */
async function dlq(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/dlq.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DJ_API_URL: h.baseUrl, ADMIN_API_KEY: operatorKey('dana') },
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('discard', () => {
  it('discards with a reason; a discarded dead letter refuses replay, also inside a larger request', async () => {
    const one = await deadLettered();
    const two = await deadLettered();
    const noReason = await admin(`/v1/dead-letters/${one.deadLetterId}/discard`, { body: {} });
    expect(noReason.status).toBe(400);
    expect(noReason.body.errors).toEqual([expect.objectContaining({ path: 'reason' })]);

    const d = await admin(`/v1/dead-letters/${one.deadLetterId}/discard`, { body: { reason: 'customer withdrew the order' } });
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ state: 'discarded', discardReason: 'customer withdrew the order' });
    // Discarding again is harmless: one action, the first reason kept.
    expect((await admin(`/v1/dead-letters/${one.deadLetterId}/discard`, { body: { reason: 'again' } })).body.discardReason).toBe(
      'customer withdrew the order',
    );
    const shown = (await admin(`/v1/dead-letters/${one.deadLetterId}`)).body;
    expect(shown.actions.filter((a: any) => a.action === 'discarded')).toEqual([
      expect.objectContaining({ actor: 'carol', details: { reason: 'customer withdrew the order' } }),
    ]);

    for (const body of [
      { ids: [one.deadLetterId] },
      { ids: [one.deadLetterId], dryRun: true },
      { ids: [two.deadLetterId, one.deadLetterId] },
    ]) {
      const r = await admin('/v1/dead-letters/replay', { body });
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ type: 'urn:durable-jobs:problem:dead-letter-discarded', ids: [one.deadLetterId] });
    }
    // Nothing was started for the open one in the refused request.
    expect((await admin(`/v1/dead-letters/${two.deadLetterId}`)).body).toMatchObject({
      state: 'open',
      replayCount: 0,
      actions: [expect.objectContaining({ action: 'recorded' })],
    });
    // A filter never selects discarded dead letters.
    const byFilter = await admin('/v1/dead-letters/replay', { body: { filter: { errorClass: 'invalid_request' }, dryRun: true } });
    expect(byFilter.body.deadLetters.map((p: any) => p.deadLetterId)).toEqual([two.deadLetterId]);
    expect((await admin('/v1/dead-letters/dl-000000000000000000000000/discard', { body: { reason: 'x' } })).status).toBe(404);
    expect((await admin('/v1/dead-letters/replay', { body: { ids: ['dl-nope'] } })).status).toBe(404);
    expect((await admin('/v1/dead-letters/replay', { body: { ids: [two.deadLetterId], filter: {} } })).status).toBe(400);

    // A replay request's activity that decides to skip the discarded one, retried after its
    // commit (Temporal runs it again when the completion is lost), audits the skip once.
    const activities = createDeadLetterActivities({ pool: h.pool, log: h.log, codeVersion: 'test', jobs: defaultJobRegistry });
    const replayId = `replay-retried-${uid()}`;
    for (let i = 0; i < 2; i++) {
      expect(await activities.prepareReplay({ deadLetterId: one.deadLetterId, replayId, actor: 'carol' })).toMatchObject({
        kind: 'skip',
        reason: 'dead letter is discarded',
      });
    }
    const skips = (await admin(`/v1/dead-letters/${one.deadLetterId}`)).body.actions.filter((a: any) => a.action === 'replay_skipped');
    expect(skips.filter((a: any) => a.details.replayId === replayId)).toHaveLength(1);
  });

  it('npm run dlq: list, show, dry run, refused replay and discard, as tables or JSON', async () => {
    const dl = await deadLettered();
    const list = await dlq('list', '--state', 'open');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+STATE\s+TYPE/);
    expect(list.stdout).toContain(dl.deadLetterId);
    const json = JSON.parse((await dlq('list', '--json')).stdout);
    expect(json.deadLetters.some((d: any) => d.id === dl.deadLetterId)).toBe(true);

    const dry = await dlq('replay', '--ids', dl.deadLetterId, '--dry-run');
    expect(dry.stdout).toContain('charge=reuse receipt=execute');
    const discarded = await dlq('discard', dl.deadLetterId, '--reason', 'card reported stolen');
    expect(discarded.code).toBe(0);
    const refused = await dlq('replay', '--ids', dl.deadLetterId);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('409 Dead letter discarded');
    const show = await dlq('show', dl.deadLetterId);
    expect(show.stdout).toContain('card reported stolen');
    // The CLI is audited under the operator its key names (ADMIN_API_KEYS), not the login name.
    expect(show.stdout).toMatch(/discarded\s+dana/);
    expect((await admin(`/v1/dead-letters/${dl.deadLetterId}`)).body.actions.at(-1)).toMatchObject({ action: 'discarded', actor: 'dana' });
    expect((await dlq('replay')).code).toBe(2); // usage error
  });
});
