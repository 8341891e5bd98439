// The console by role, in a real browser (Debian's Chromium through playwright-core): a viewer
// sees no action and no result; an operator sees the dead-letter actions but not the
// degradation form; the key is kept nowhere in the page, and sign-out ends the session.
import { existsSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAdminKeys } from '../../lib/config-admin-keys.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { buildApp } from '../../server/app.js';
import { ADMIN_KEY, startHarness, uid, type Harness } from '../support/harness.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const WAIT = 90_000;
// Test-only keys, not real credentials.
const VIEWER_KEY = 'console-roles-viewer-key-01-padded-to-32';
const OPERATOR_KEY = 'console-roles-operator-key1-padded-to-32';
// page.evaluate callbacks run in the page: these globals exist there, not in Node.
declare const document: {
  querySelector(s: string): { textContent: string | null } | null;
  documentElement: { outerHTML: string };
  cookie: string;
};
declare const sessionStorage: { length: number };
declare const localStorage: { length: number };
declare const location: { hash: string };

let h: Harness;
let app: FastifyInstance;
let base: string;
let browser: Browser;
let jobId: string;
let summary: string;
let deadLetterId: string;

async function textMatches(page: Page, selector: string, re: RegExp): Promise<string> {
  await page.waitForFunction(
    ({ s, src, flags }) => new RegExp(src, flags).test(document.querySelector(s)?.textContent ?? ''),
    { s: selector, src: re.source, flags: re.flags },
    { timeout: WAIT, polling: 250 },
  );
  return (await page.textContent(selector)) ?? '';
}

async function signedIn(key: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${base}/console`);
  await page.fill('#admin-key', key);
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])', { timeout: WAIT });
  return { context, page };
}

const hash = (page: Page, h: string) =>
  page.evaluate((x) => {
    location.hash = x;
  }, h);

/** The texts of the buttons and forms a person can see in the app. */
const visibleButtons = (page: Page) =>
  page.$$eval('#app button, #app input[type=checkbox]', (els) =>
    els
      .filter((e) => (e as unknown as { checkVisibility(): boolean }).checkVisibility())
      .map((e) => e.textContent?.trim() || e.getAttribute('aria-label') || e.tagName),
  );

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  h = await startHarness('console-roles');
  app = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: h.log,
    adminKeys: parseAdminKeys(`vera:viewer=${VIEWER_KEY},otto:operator=${OPERATOR_KEY}`, undefined),
    version: 'test',
    webhookSecrets: {},
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  // A job with a result, and a dead letter (the receipt refused for good).
  const r = await h.submit('summarize', { text: `Quarterly numbers ${uid()} are confidential. Do not share.` });
  jobId = r.body.jobId;
  await h.waitForStatus(jobId, 'succeeded');
  const asAdmin = await h.api(`/v1/admin/jobs/${jobId}`, { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  summary = String(asAdmin.body.result.summary ?? JSON.stringify(asAdmin.body.result));
  expect(summary.length).toBeGreaterThan(5);
  await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
  const p = await h.submit('purchase', { amountCents: 900, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'ops@example.com' });
  deadLetterId = (await h.waitForStatus(p.body.jobId, 'dead_lettered')).deadLetterId;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await h?.close();
});

describe('the console by role', () => {
  it('a viewer sees no action buttons and no results, and the key is kept nowhere in the page', async () => {
    const { context, page } = await signedIn(VIEWER_KEY);
    await textMatches(page, '#whoami', /^vera$/);
    await textMatches(page, '#whoami-role', /^viewer$/);
    expect(await page.evaluate(() => [sessionStorage.length, localStorage.length, document.cookie])).toEqual([0, 0, '']);
    expect(await page.evaluate(() => document.documentElement.outerHTML)).not.toContain(VIEWER_KEY);

    await hash(page, `#jobs/${encodeURIComponent(jobId)}`);
    await textMatches(page, '#job-fields', /succeeded/);
    expect(await textMatches(page, '#job-result', /not shown to viewers/)).not.toContain(summary);
    expect(await page.evaluate(() => document.documentElement.outerHTML)).not.toContain(summary);

    await hash(page, `#dead-letters/${encodeURIComponent(deadLetterId)}`);
    await textMatches(page, '#dl-detail-id', new RegExp(deadLetterId));
    await page.waitForSelector(`#dl-list input[data-id="${deadLetterId}"]`, { state: 'attached' });
    for (const sel of [
      '#dl-dry-run',
      '#dl-replay-start',
      '#dl-discard button',
      '#dl-pause',
      '#dl-stop',
      `#dl-list input[data-id="${deadLetterId}"]`,
    ])
      expect(await page.isVisible(sel), sel).toBe(false);
    // What a viewer can press are reads only: search, list, page through.
    const reads = ['Search', 'List', 'Next page'];
    const onDeadLetters = await visibleButtons(page);
    expect(onDeadLetters).toContain('List');
    for (const b of onDeadLetters) expect(reads, `visible to a viewer: ${b}`).toContain(b);

    await hash(page, '#degradation');
    await textMatches(page, '#deg-fields', /\S/);
    expect(await page.isVisible('#deg-form button[type=submit]')).toBe(false);
    for (const b of await visibleButtons(page)) expect(reads, `visible to a viewer: ${b}`).toContain(b);

    // Sign-out ends the session on the server: the page is back at sign-in, and the API says 401.
    await page.click('#sign-out');
    await page.waitForSelector('#sign-in:not([hidden])', { timeout: WAIT });
    const status = await page.evaluate(async () => (await fetch('/v1/admin/whoami', { credentials: 'same-origin' })).status);
    expect(status).toBe(401);
    await context.close();
  });

  it('an operator sees the dead-letter actions, but not the degradation form (admin)', async () => {
    const { context, page } = await signedIn(OPERATOR_KEY);
    await textMatches(page, '#whoami-role', /^operator$/);
    await hash(page, `#dead-letters/${encodeURIComponent(deadLetterId)}`);
    await textMatches(page, '#dl-detail-id', new RegExp(deadLetterId));
    await page.waitForSelector('#dl-discard button', { state: 'visible', timeout: WAIT });
    expect(await page.isVisible('#dl-dry-run')).toBe(true);
    await hash(page, `#jobs/${encodeURIComponent(jobId)}`);
    await textMatches(page, '#job-result', new RegExp(summary.slice(0, 20).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    await hash(page, '#degradation');
    await textMatches(page, '#deg-fields', /\S/);
    expect(await page.isVisible('#deg-form button[type=submit]')).toBe(false);
    await context.close();
  });
});
