// The console's bulk-actions page in a real browser: a bulk cancel by filter, previewed first,
// then paused, resumed and stopped from the page while it runs (each command on record under the
// operator, the jobs outside what it reached untouched); a discard of dead letters by filter; a
// filter matching nothing refused with a problem naming it.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, launchBrowser, openHash, signIn, textMatches } from '../support/console-browser.js';
import { operatorKey, startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

let h: Harness;
let browser: Browser;

const admin = (path: string) => h.api(path, { tenant: null, headers: { authorization: `Bearer ${operatorKey('carol')}` } });

beforeAll(async () => {
  h = await startHarness('console-bulk');
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

/** Fills the new-bulk-action form: the action and the given fields, every other field emptied. */
async function fillForm(page: Page, action: string, fields: Record<string, string>): Promise<void> {
  await page.selectOption('#bulk-form select[name=action]', action);
  for (const name of [
    'tenantId',
    'type',
    'state',
    'tag',
    'errorClass',
    'cluster',
    'fromStep',
    'batchSize',
    'concurrency',
    'ratePerMinute',
    'reason',
  ])
    await page.fill(`#bulk-form input[name=${name}]`, fields[name] ?? '');
}

describe('the bulk-actions page', () => {
  it('previews a bulk cancel, starts it, and pauses, resumes and stops it while it runs', async () => {
    const tag = `batch:console-${uid()}`;
    const ids: string[] = [];
    for (let i = 0; i < 6; i++)
      ids.push(
        (
          await h.jobs.submitJob({
            tenantId: TENANTS.a.id,
            type: 'summarize',
            idempotencyKey: `bulk-console-${uid()}`,
            input: { text: 'waits an hour; a bulk cancel reaches it first' },
            delaySeconds: 3_600,
            tags: { batch: tag.slice('batch:'.length) },
          })
        ).jobId,
      );
    const { page, errors } = await signIn(browser, h.baseUrl, operatorKey('carol'));
    await openHash(page, '#bulk');
    await page.waitForSelector('#bulk-form');

    // A filter matching nothing: refused, naming the filter, and nothing can start.
    await fillForm(page, 'cancel', { tag: `batch:none-${uid()}` });
    await page.click('#bulk-preview');
    await textMatches(page, '#bulk-error', /422 .*filter: the filter matches nothing to cancel/);
    expect(await page.isDisabled('#bulk-start')).toBe(true);

    // Two a minute, one at a time: slow enough to steer from the page.
    await fillForm(page, 'cancel', { tag, ratePerMinute: '2', batchSize: '1', concurrency: '1', reason: 'customer withdrew' });
    await page.click('#bulk-preview');
    await textMatches(page, '#bulk-preview-text', /cancel would touch 6 \(limit 1000\): 6 of summarize for tenant-a/);
    await page.click('#bulk-start');
    await textMatches(page, '#bulk-counts', /cancel by carol: 1 applied/);
    const bulkId = (await page.textContent('#bulk-id'))!;
    expect(bulkId).toMatch(/^bulk-/);

    await page.click('#bulk-pause');
    await textMatches(page, '#bulk-state', /^paused$/);
    await textMatches(page, '#bulk-commands tbody', /pausedcarol/);
    await page.click('#bulk-resume');
    await textMatches(page, '#bulk-state', /^running$/);
    await textMatches(page, '#bulk-commands tbody', /resumedcarol/);
    await page.fill('#bulk-stop-reason', 'enough for today');
    await page.click('#bulk-stop');
    await textMatches(page, '#bulk-state', /^stopped$/);
    await textMatches(page, '#bulk-counts', /stopped: enough for today/);
    await textMatches(page, '#bulk-commands tbody', /stoppedcarolenough for today/);
    await textMatches(page, '#bulk-items tbody', /appliedcarolcancellation requested/);
    await page.waitForSelector('#bulk-pause:disabled');
    expect(await page.isDisabled('#bulk-stop')).toBe(true);
    await page.screenshot({ path: `${ARTIFACTS}bulk-stopped.png`, fullPage: true });

    // What the page showed is what happened: the action stopped short, and the jobs it did not reach still wait.
    const b = (await admin(`/v1/admin/bulk-actions/${bulkId}`)).body;
    expect(b).toMatchObject({ state: 'stopped', requestedBy: 'carol', stopReason: 'enough for today' });
    expect(b.commands.map((c: { command: string; actor: string }) => `${c.command}:${c.actor}`)).toEqual([
      'paused:carol',
      'resumed:carol',
      'stopped:carol',
    ]);
    const applied = b.items.filter((i: { outcome: string }) => i.outcome === 'applied').map((i: { targetId: string }) => i.targetId);
    expect(applied.length).toBeGreaterThanOrEqual(1);
    expect(applied.length).toBeLessThan(6);
    const untouched = ids.filter((id) => !applied.includes(id));
    for (const id of untouched) expect((await admin(`/v1/admin/jobs/${id}`)).body.status).toBe('scheduled');
    for (const id of applied) await h.waitForStatus(id, 'cancelled');
    // The list shows it too, and links to it.
    await textMatches(page, `#bulk-list tbody tr[data-bulk="${bulkId}"]`, /cancelstopped/);
    expect(errors).toEqual([]);
  });

  it('discards dead letters by filter as one bulk action, each audited under the operator', async () => {
    await h.simFault({ path: '/v1/receipts', times: 2, status: 400 });
    const deadLetters: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await h.submit(
        'purchase',
        { amountCents: 700 + i, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'c@example.com' },
        { tenant: 'b' },
      );
      deadLetters.push((await h.waitForStatus(r.body.jobId, 'dead_lettered', 'b')).deadLetterId as string);
    }
    const { page, errors } = await signIn(browser, h.baseUrl, operatorKey('carol'));
    await openHash(page, '#bulk');
    await page.waitForSelector('#bulk-form');
    await fillForm(page, 'discard', { tenantId: TENANTS.b.id, type: 'purchase', reason: 'refunded by hand' });
    await page.click('#bulk-preview');
    await textMatches(page, '#bulk-preview-text', /discard would touch 2 \(limit 1000\): 2 of purchase for tenant-b/);
    // A change after the preview needs a new one.
    await page.fill('#bulk-form input[name=reason]', 'refunded by hand, customers told');
    expect(await page.isDisabled('#bulk-start')).toBe(true);
    await page.click('#bulk-preview');
    await textMatches(page, '#bulk-preview-text', /discard would touch 2/);
    await page.click('#bulk-start');
    await textMatches(page, '#bulk-state', /^completed$/);
    await textMatches(page, '#bulk-counts', /2 applied, 0 skipped, 0 failed of 2/);
    await textMatches(page, '#bulk-items tbody', /appliedcaroldiscarded.*appliedcaroldiscarded/);
    for (const id of deadLetters)
      expect((await admin(`/v1/dead-letters/${id}`)).body).toMatchObject({
        state: 'discarded',
        discardReason: 'refunded by hand, customers told',
        actions: expect.arrayContaining([expect.objectContaining({ action: 'discarded', actor: 'carol' })]),
      });
    // An item links to its dead letter's page.
    await page.click(`#bulk-items tbody tr[data-target="${deadLetters[0]}"] a`);
    await textMatches(page, '#dl-detail-id', new RegExp(deadLetters[0]!));
    expect(errors).toEqual([]);
  });
});
