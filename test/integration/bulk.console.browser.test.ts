import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, launchBrowser, textMatches as matches, WAIT } from '../support/console-browser.js';
import { operatorKey, startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

// The console's dead-letter page opens on the failure clusters; a cluster is previewed and
// discarded as one bulk action, in a real browser (Debian's Chromium, playwright-core).
declare const document: { querySelector(s: string): { textContent: string | null } | null };
declare const location: { hash: string };

let h: Harness;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

const textMatches = (selector: string, re: RegExp): Promise<string> => matches(page, selector, re);

beforeAll(async () => {
  h = await startHarness('bulk-console');
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 40[14]/.test(m.text())) pageErrors.push(m.text());
  });
  page.on('pageerror', (e) => pageErrors.push(e.message));
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function deadLettered(n: number, tenant: 'a' | 'b'): Promise<string[]> {
  await h.simFault({ path: '/v1/receipts', times: n, status: 400 });
  const jobIds = [];
  for (let i = 0; i < n; i++)
    jobIds.push(
      (
        await h.submit(
          'purchase',
          { amountCents: 300 + i, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'c@example.com' },
          { tenant },
        )
      ).body.jobId,
    );
  const out = [];
  for (const id of jobIds) out.push((await h.waitForStatus(id, 'dead_lettered', tenant)).deadLetterId as string);
  return out;
}

describe('the dead-letter page in a browser', () => {
  it('opens on the failure clusters; a cluster is previewed and discarded as one bulk action, audited under the operator', async () => {
    const a = await deadLettered(3, 'a');
    const b = await deadLettered(1, 'b');

    await page.goto(`${h.baseUrl}/console`);
    await page.fill('#admin-key', operatorKey('carol'));
    await page.click('#sign-in-form button[type=submit]');
    await textMatches('#whoami', /carol/);
    await page.evaluate(() => {
      location.hash = '#dead-letters';
    });
    // Clusters first: the largest cluster is the first row (3 of tenant-a), then tenant-b's.
    await textMatches('#dl-clusters tbody', new RegExp(`3${TENANTS.a.id}purchase`));
    expect(await page.textContent('#dl-clusters tbody tr:nth-child(2)')).toContain(TENANTS.b.id);
    const rows = await page.$$eval('#dl-clusters tbody tr', (trs) =>
      trs.map((tr) => (tr as unknown as { textContent: string }).textContent),
    );
    expect(rows).toHaveLength(2);
    // The signature column shows the message with its IDs and numbers masked.
    expect(rows[0]).toMatch(/<(n|id)>/);

    await page.click('#dl-clusters tbody tr:nth-child(1) button.cluster-preview');
    await textMatches('#dl-cluster-preview', /3 open dead letter\(s\) of purchase for tenant-a/);
    await page.fill('#dl-cluster-action input[name=reason]', 'bad receipt addresses, customers informed');
    await page.click('#dl-cluster-discard');
    await textMatches('#dl-cluster-bulk', /discard bulk-[0-9a-f-]+: completed; 3 applied, 0 skipped, 0 failed of 3/);
    // It links to the bulk-actions page, which shows it whole.
    expect(await page.getAttribute('#dl-cluster-bulk a', 'href')).toMatch(/^#bulk\/bulk-[0-9a-f-]+$/);
    // The page refreshed: only tenant-b's cluster is left.
    await page.waitForFunction(
      () =>
        (document.querySelector('#dl-clusters tbody')?.textContent ?? '').includes('tenant-b') &&
        !(document.querySelector('#dl-clusters tbody')?.textContent ?? '').includes('tenant-a'),
      undefined,
      { timeout: WAIT, polling: 250 },
    );
    await page.screenshot({ path: `${ARTIFACTS}dead-letter-clusters.png`, fullPage: true });

    const admin = (path: string) => h.api(path, { tenant: null, headers: { authorization: `Bearer ${operatorKey('carol')}` } });
    for (const id of a)
      expect((await admin(`/v1/dead-letters/${id}`)).body).toMatchObject({
        state: 'discarded',
        discardReason: 'bad receipt addresses, customers informed',
        actions: expect.arrayContaining([expect.objectContaining({ action: 'discarded', actor: 'carol' })]),
      });
    expect((await admin(`/v1/dead-letters/${b[0]}`)).body.state).toBe('open');
    expect(pageErrors).toEqual([]);
  });
});
