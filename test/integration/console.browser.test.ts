import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorKey, startHarness, TENANTS, uid, waitFor, type Harness } from '../support/harness.js';

// The operator console in a real browser: Debian's Chromium driven by playwright-core (a test
// tool's own browser download cannot work here), against the real stack.
const CHROMIUM = '/usr/bin/chromium';
// page.evaluate callbacks run in the page: these globals exist there, not in Node.
declare const document: {
  querySelector(s: string): { textContent: string | null; getAttribute(n: string): string | null } | null;
  documentElement: { outerHTML: string };
};
declare const getComputedStyle: (e: unknown) => { cursor: string; backgroundColor: string };
declare class Image {
  src: string;
  naturalWidth: number;
  onload: (() => void) | null;
  onerror: (() => void) | null;
}
declare const location: { hash: string };
declare const sessionStorage: { length: number };
declare const window: { __pwned?: number };
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/console/', import.meta.url));
const WAIT = 90_000;
const HOSTILE = '"><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> is hostile.';

let h: Harness;
let browser: Browser;
let page: Page;
/** Every console error and CSP violation the page reports; the suite ends with none. */
const pageErrors: string[] = [];

const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
/** Waits until the element's text matches (the console refreshes itself; never a fixed sleep). */
async function textMatches(selector: string, re: RegExp, timeout = WAIT): Promise<string> {
  await page.waitForFunction(
    ({ s, src, flags }) => new RegExp(src, flags).test(document.querySelector(s)?.textContent ?? ''),
    { s: selector, src: re.source, flags: re.flags },
    { timeout, polling: 250 },
  );
  return (await page.textContent(selector)) ?? '';
}
async function signIn(key: string): Promise<void> {
  await page.goto(`${h.baseUrl}/console`);
  await page.fill('#admin-key', key);
  await page.click('#sign-in-form button[type=submit]');
}
async function openJob(jobId: string): Promise<void> {
  await page.evaluate((id) => {
    location.hash = `#jobs/${encodeURIComponent(id)}`;
  }, jobId);
  await textMatches('#job-detail-id', new RegExp(jobId));
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  h = await startHarness('console');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
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

describe('the operator console', () => {
  it('is served with a strict Content-Security-Policy and no inline script', async () => {
    const res = await fetch(`${h.baseUrl}/console`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const d of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ])
      expect(csp).toContain(d);
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('set-cookie')).toBeNull();
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\son[a-z]+=/);
    expect((await fetch(`${h.baseUrl}/console/vendor/uPlot.iife.min.js`)).status).toBe(200);
    // A favicon of its own, same-origin, so img-src 'self' covers it (no data: URI to allow).
    expect(html).toContain('<link rel="icon" href="console/favicon.svg" type="image/svg+xml">');
    const icon = await fetch(`${h.baseUrl}/console/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.headers.get('content-security-policy')).toContain("img-src 'self'");
  });

  it('GET /v1/admin/jobs filters precisely and answers bad filters with RFC 9457 problems', async () => {
    const admin = (q: string) =>
      h.api(`/v1/admin/jobs${q}`, { tenant: null, headers: { authorization: `Bearer ${operatorKey('olive')}` } });
    for (const [q, path] of [
      ['?state=nope', 'state'],
      ['?limit=0', 'limit'],
      ['?limit=201', 'limit'],
      ['?color=red', 'color'],
    ] as const) {
      const r = await admin(q);
      expect(r.status, q).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(
        r.body.errors.map((e: { path: string }) => e.path),
        q,
      ).toContain(path);
    }
    const a = await h.submit('summarize', { text: 'Tenant a.' });
    const b = await h.submit('summarize', { text: 'Tenant b.' }, { tenant: 'b' });
    await h.waitForStatus(a.body.jobId, 'succeeded');
    const byTenant = (await admin(`?tenantId=${TENANTS.b.id}&type=summarize`)).body.jobs;
    expect(byTenant.map((j: { jobId: string }) => j.jobId)).toEqual([b.body.jobId]);
    expect(byTenant[0]).toMatchObject({ tenantId: TENANTS.b.id, type: 'summarize' });
    expect(byTenant[0]).not.toHaveProperty('input');
    expect((await admin(`?jobId=${a.body.jobId}&state=succeeded`)).body.jobs).toHaveLength(1);
    expect((await admin(`?jobId=${a.body.jobId}&state=running`)).body.jobs).toHaveLength(0);
    expect(
      (await h.api(`/v1/admin/jobs/nope`, { tenant: null, headers: { authorization: `Bearer ${operatorKey('olive')}` } })).status,
    ).toBe(404);
  });

  it('refuses a tenant key: the console does not open and no admin route answers it', async () => {
    await signIn(TENANTS.a.key);
    expect(await textMatches('#sign-in-error', /not an admin key/)).toMatch(/Refused/);
    expect(await page.isHidden('#app')).toBe(true);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await shot('01-sign-in-refused');
    for (const path of ['/v1/admin/whoami', '/v1/admin/jobs', '/v1/dead-letters', '/v1/admin/queue-health', '/v1/admin/degradation']) {
      expect((await h.api(path, { tenant: 'a' })).status, path).toBe(401);
    }
  });

  it('an operator signs in, finds a dead-lettered job, reads its timeline, previews and replays it, and watches it succeed', async () => {
    await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
    const r = await h.submit('purchase', { amountCents: 1200, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'ops@example.com' });
    const jobId: string = r.body.jobId;
    const { deadLetterId } = await h.waitForStatus(jobId, 'dead_lettered');

    await signIn(operatorKey('olive'));
    await textMatches('#whoami', /^olive$/);
    // The key is kept in this tab only and never rendered.
    expect(await page.evaluate(() => document.documentElement.outerHTML)).not.toContain(operatorKey('olive'));
    expect(await page.inputValue('#admin-key')).toBe('');

    // Before a job is chosen there is no Job card and no Timeline card (not even empty ones).
    expect(await page.isHidden('#job-detail')).toBe(true);
    expect(await page.isHidden('#timeline-verdict')).toBe(true);
    // The favicon loads under the page's own CSP.
    const iconWidth = await page.evaluate(
      (href) =>
        new Promise<number>((resolve) => {
          const img = new Image();
          img.onload = () => resolve(img.naturalWidth);
          img.onerror = () => resolve(-1);
          img.src = href!;
        }),
      await page.getAttribute('link[rel=icon]', 'href'),
    );
    expect(iconWidth).toBeGreaterThan(0);

    // Find it by tenant and state.
    await page.fill('#job-search input[name=tenantId]', TENANTS.a.id);
    await page.selectOption('#job-search select[name=state]', 'dead_lettered');
    await page.click('#job-search button[type=submit]');
    const row = `#job-results tr[data-job-id="${jobId}"]`;
    await page.waitForSelector(row);
    expect(await page.isHidden('#job-detail')).toBe(true);
    // The row looks clickable: a pointer, a link on its job ID, a background on hover.
    expect(await page.getAttribute(`${row} a.row-link`, 'href')).toBe(`#jobs/${encodeURIComponent(jobId)}`);
    const style = () => page.$eval(row, (e) => ({ cursor: getComputedStyle(e).cursor, bg: getComputedStyle(e).backgroundColor }));
    const before = await style();
    expect(before.cursor).toBe('pointer');
    await page.hover(`${row} td:last-child`);
    await page.waitForFunction(
      ({ sel, was }) => getComputedStyle(document.querySelector(sel)).backgroundColor !== was,
      { sel: row, was: before.bg },
      { timeout: WAIT, polling: 100 },
    );
    await page.click(row);
    await textMatches('#job-fields', /dead_lettered/);
    const ui = await page.getAttribute('#job-links a', 'href');
    expect(ui).toBe(`http://127.0.0.1:8233/namespaces/default/workflows/${encodeURIComponent(jobId)}`);
    // The timeline panel: the verdict and events, or says plainly that this API has none.
    await textMatches('#timeline-verdict', /\S/);
    await shot('02-job-dead-lettered');

    // Its dead letter: evidence, a dry run (the charge is reused, the receipt executed), a replay.
    await page.click('#job-fields a[href^="#dead-letters/"]');
    await textMatches('#dl-detail-id', new RegExp(deadLetterId));
    await textMatches('#dl-fields', /HTTP 400/);
    await page.check(`#dl-list input[data-id="${deadLetterId}"]`);
    await page.click('#dl-dry-run');
    await textMatches('#dl-preview-table', /charge.*reuse/s);
    expect(await page.textContent('#dl-preview-table')).toMatch(/receipt.*execute/s);
    await shot('03-dead-letter-dry-run');
    await page.fill('#dl-replay input[name=batchSize]', '1');
    await page.fill('#dl-replay input[name=concurrency]', '1');
    await page.fill('#dl-replay input[name=ratePerMinute]', '30');
    await page.click('#dl-replay-start');
    await textMatches('#dl-replay-state', /^completed$/);
    await textMatches('#dl-items', /succeeded/);
    expect(await page.textContent('#dl-replay-counts')).toMatch(/1 succeeded, 0 failed.*batch 1, concurrency 1.*30\/min · by olive/);
    await textMatches('#dl-fields', /replayed/); // the evidence panel follows
    await shot('04-replay-completed');

    // The replay job, from the progress table: succeeded.
    const replayJobId = (await page.textContent('#dl-items a'))!;
    await page.click('#dl-items a');
    await textMatches('#job-detail-id', new RegExp(replayJobId));
    await textMatches('#job-fields', /succeeded/);
    expect(await page.textContent('#job-fields')).toContain(jobId); // replay of
    // Audited under the key's operator.
    const shown = await h.api(`/v1/dead-letters/${deadLetterId}`, {
      tenant: null,
      headers: { authorization: `Bearer ${operatorKey('olive')}` },
    });
    expect(shown.body.actions.filter((a: { actor: string }) => a.actor !== 'system').map((a: { actor: string }) => a.actor)).toEqual(
      expect.arrayContaining(['olive']),
    );
    expect(shown.body.actions.every((a: { actor: string }) => ['system', 'olive'].includes(a.actor))).toBe(true);
  });

  it('reads the timeline of a job (verdict, per-stage times, events in UTC)', async () => {
    const r = await h.submit('summarize', { text: 'A timeline to read.' });
    await h.waitForStatus(r.body.jobId, 'succeeded');
    await openJob(r.body.jobId);
    await textMatches('#timeline-verdict', /\S/);
    await page.waitForFunction(() => document.querySelector('#timeline-verdict')?.getAttribute('data-state') === 'done', undefined, {
      timeout: WAIT,
    });
    await waitFor('timeline events', async () => (await page.locator('#timeline-events tbody tr').count()) > 3);
    expect(await page.textContent('#timeline-events')).toMatch(/postgres/);
    expect(await page.textContent('#timeline-events')).toMatch(/temporal/);
    await shot('05-timeline');
  });

  it('pauses low priority; a low job shows as deferred, and the change is audited under the operator', async () => {
    await page.evaluate(() => {
      location.hash = '#degradation';
    });
    await textMatches('#deg-fields', /ramp rate/);
    await page.check('#deg-form input[name=paused][value=low]');
    await page.fill('#deg-form input[name=reason]', 'provider brown-out (browser test)');
    await page.click('#deg-form button[type=submit]');
    await textMatches('#deg-fields', /low since/);
    await textMatches('#deg-audit tbody', /olive.*provider brown-out \(browser test\)/s);

    const low = await h.submit('summarize', { text: 'Low priority, held back.' }, { priority: 'low' });
    await h.waitForStatus(low.body.jobId, 'deferred');
    await textMatches('#deg-deferred', /low\s*1/); // refreshed live
    await shot('06-degradation');
    await openJob(low.body.jobId);
    await textMatches('#job-fields', /deferred/);
    expect(await page.textContent('#job-fields')).toMatch(/deferred since/);

    // Resume, from the console; the job runs.
    await page.evaluate(() => {
      location.hash = '#degradation';
    });
    await textMatches('#deg-fields', /low since/);
    await page.uncheck('#deg-form input[name=paused][value=low]');
    await page.click('#deg-form button[type=submit]');
    await textMatches('#deg-fields', /paused\s*nothing/);
    await h.waitForStatus(low.body.jobId, 'succeeded');
  });

  it('shows hostile job data as text, never as markup', async () => {
    const r = await h.submit('summarize', { text: HOSTILE });
    await h.waitForStatus(r.body.jobId, 'succeeded');
    await openJob(r.body.jobId);
    await textMatches('#job-result', /hostile/);
    expect(await page.textContent('#job-result')).toContain(
      '"><img src=x onerror=\\"window.__pwned=1\\"><script>window.__pwned=2</script>',
    );
    expect(await page.evaluate(() => window.__pwned)).toBeUndefined();
    expect(await page.locator('main img, main script').count()).toBe(0);
    await shot('07-hostile-input');
  });

  it('pages through a search with Next page, by keyset, and shows a scheduled job with its time', async () => {
    const tag = `console-${uid()}`;
    const jobIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await h.api('/v1/jobs', {
        body: { type: 'summarize', input: { text: `Later ${i}.` }, delaySeconds: 600, tags: { batch: tag } },
        headers: { 'idempotency-key': `key-${uid()}` },
      });
      jobIds.push(r.body.jobId);
    }
    await page.evaluate(() => {
      location.hash = '#jobs';
    });
    await page.fill('#job-search input[name=tenantId]', '');
    await page.selectOption('#job-search select[name=state]', 'scheduled');
    await page.fill('#job-search input[name=tag]', `batch:${tag}`);
    await page.fill('#job-search input[name=limit]', '2');
    await page.click('#job-search button[type=submit]');
    const rows = () =>
      page.$$eval('#job-results tbody tr', (trs) => trs.map((tr) => (tr as unknown as { dataset: { jobId: string } }).dataset.jobId));
    await page.waitForSelector(`#job-results tr[data-job-id="${jobIds[2]}"]`);
    expect(await rows()).toEqual([jobIds[2], jobIds[1]]);
    await textMatches('#job-page', /^page 1$/);
    expect(await page.textContent(`#job-results tr[data-job-id="${jobIds[2]}"]`)).toMatch(/scheduled for \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ/);
    // The form changes, but Next page continues the list that was searched.
    await page.fill('#job-search input[name=tag]', 'batch:other');
    await page.click('#job-next');
    await page.waitForSelector(`#job-results tr[data-job-id="${jobIds[0]}"]`);
    expect(await rows()).toEqual([jobIds[0]]);
    await textMatches('#job-page', /^page 2, the last$/);
    expect(await page.isHidden('#job-next')).toBe(true);
    await shot('08-jobs-next-page');
    for (const jobId of jobIds) await h.api(`/v1/jobs/${jobId}/cancel`, { method: 'POST' });
  });

  it('plots queue health over the last hour, refreshed live', async () => {
    await page.evaluate(() => {
      location.hash = '#health';
    });
    await textMatches('#health-figures', /backlog/);
    await waitFor('four uPlot charts', async () => (await page.locator('.plots .uplot canvas').count()) >= 4);
    const first = await textMatches('#health-at', /refreshed every 10 s/);
    await shot('09-queue-health');
    // Live: the next snapshot replaces this one without a reload.
    await page.waitForFunction((was) => document.querySelector('#health-at')?.textContent !== was, first, {
      timeout: 30_000,
      polling: 500,
    });
    expect(pageErrors).toEqual([]);
  });
});
