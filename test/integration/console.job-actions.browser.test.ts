// The job page's actions in a real browser: an operator cancels a scheduled job, and reruns a
// dead-lettered one from its failed step after a preview that says which effects execute again
// (the charge is reused: the upstream never sees it twice). The timeline of that job, retries and
// all, fits its card at 1400 px (review D9).
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, launchBrowser, openHash, signIn, textMatches } from '../support/console-browser.js';
import { operatorKey, startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

let h: Harness;
let browser: Browser;
// page.evaluate callbacks run in the page.
declare const document: {
  querySelector(s: string): { scrollWidth: number; clientWidth: number; getBoundingClientRect(): { right: number } } | null;
  querySelectorAll(s: string): ArrayLike<{ getBoundingClientRect(): { right: number } }>;
};

beforeAll(async () => {
  h = await startHarness('console-job-actions');
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

const openJob = async (page: Page, jobId: string) => {
  await openHash(page, `#jobs/${jobId}`);
  await textMatches(page, '#job-detail-id', new RegExp(jobId));
};

describe('the job page actions', () => {
  it('cancels a scheduled job, audited under the operator as a bulk action of one', async () => {
    const { jobId } = await h.jobs.submitJob({
      tenantId: TENANTS.a.id,
      type: 'summarize',
      idempotencyKey: `cancel-${uid()}`,
      input: { text: 'waits an hour, cancelled from the console before it runs' },
      delaySeconds: 3_600,
    });
    const { page, errors } = await signIn(browser, h.baseUrl, operatorKey('dana'));
    await openJob(page, jobId);
    await textMatches(page, '#job-fields', /statusscheduled/);
    expect(await page.isVisible('#job-rerun-box')).toBe(false);
    await page.fill('#job-cancel-reason', 'customer withdrew');
    await page.click('#job-cancel');
    await textMatches(page, '#job-action-result', /cancellation requested \(bulk-[0-9a-f-]+\)/);
    // The page follows the job while it is unfinished: it turns cancelled, and may now be rerun.
    await textMatches(page, '#job-fields', /statuscancelled/);
    await page.waitForSelector('#job-rerun-box:not([hidden])');
    expect(await page.isVisible('#job-cancel-box')).toBe(false);

    const bulkId = /\((bulk-[0-9a-f-]+)\)/.exec((await page.textContent('#job-action-result'))!)![1]!;
    const b = (
      await h.api(`/v1/admin/bulk-actions/${bulkId}`, { tenant: null, headers: { authorization: `Bearer ${operatorKey('dana')}` } })
    ).body;
    expect(b).toMatchObject({ action: 'cancel', requestedBy: 'dana', selector: { ids: [jobId] } });
    expect(b.items).toEqual([expect.objectContaining({ targetId: jobId, outcome: 'applied', actor: 'dana' })]);
    expect(errors).toEqual([]);
  });

  it('reruns a dead-lettered job from its failed step after a preview; its timeline fits the card at 1400 px', async () => {
    // The receipt: unavailable once (a retry with its reasons in the timeline), then refused for good.
    await h.simFault({ path: '/v1/receipts', times: 1, status: 503 });
    await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
    const r = await h.submit('purchase', {
      amountCents: 4_200,
      currency: 'EUR',
      customer: `cus_${uid()}`,
      receiptEmail: 'rerun@example.com',
    });
    const jobId = r.body.jobId as string;
    await h.waitForStatus(jobId, 'dead_lettered');

    const { page, errors } = await signIn(browser, h.baseUrl, operatorKey('dana'));
    await openJob(page, jobId);
    await textMatches(page, '#timeline-events tbody', /503/);
    const fit = await page.evaluate(() => {
      const card = document.querySelector('#timeline')!;
      const cells = Array.from(document.querySelectorAll('#timeline-events td'));
      return {
        scrollWidth: card.scrollWidth,
        clientWidth: card.clientWidth,
        overhang: Math.max(...cells.map((c) => c.getBoundingClientRect().right)) - card.getBoundingClientRect().right,
      };
    });
    await page.screenshot({ path: `${ARTIFACTS}job-timeline-1400.png`, fullPage: true });
    expect(fit.scrollWidth).toBeLessThanOrEqual(fit.clientWidth);
    expect(fit.overhang).toBeLessThanOrEqual(0);

    // The first preview (from the start) came with the job: both effects execute again.
    await textMatches(page, '#job-rerun-effects tbody', /chargeexecute.*receiptexecute/);
    await page.selectOption('#job-rerun-step', 'receipt');
    expect(await page.isDisabled('#job-rerun')).toBe(true);
    await page.click('#job-rerun-preview');
    await textMatches(
      page,
      '#job-action-result',
      new RegExp(`rerun as ${jobId}-rerun-1 from receipt: 1 effect\\(s\\) execute again, 1 reused`),
    );
    await textMatches(page, '#job-rerun-effects tbody', /chargereusesucceeded.*receiptexecute/);
    await page.click('#job-rerun');
    await textMatches(page, '#job-action-result', /rerun started: .*-rerun-1/);
    await page.click('#job-rerun-link');
    await textMatches(page, '#job-detail-id', new RegExp(`${jobId}-rerun-1`));
    await textMatches(page, '#job-fields', /statussucceeded/);
    await textMatches(page, '#job-fields', new RegExp(`rerun of${jobId} from receipt`));

    // The charge was reused, not sent again; the receipt went out under the rerun's own key.
    const sim = await h.simEffects();
    expect(sim.byKey[`${jobId}-rerun-1:charge`]).toBeUndefined();
    expect(sim.byKey[`${jobId}-rerun-1:receipt`]).toMatchObject({ applied: 1 });
    expect(errors).toEqual([]);
  });
});
