// The console's tenants page in a real browser: an admin creates a tenant, gives it a key (shown
// once, then used, then revoked), changes its entitlement; a bad key name is refused naming the
// field. A viewer sees neither the page nor any action. The degradation audit says what changed.
import type { FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAdminKeys } from '../../lib/config-admin-keys.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { buildApp } from '../../server/app.js';
import { ARTIFACTS, launchBrowser, openHash, signIn, textMatches, visibleButtons } from '../support/console-browser.js';
import { ADMIN_KEY, startHarness, uid, type Harness } from '../support/harness.js';

// Test-only key, not a real credential.
const VIEWER_KEY = 'console-tenants-viewer-key-padded-to-32';

let h: Harness;
let viewerApp: FastifyInstance;
let viewerBase: string;
let browser: Browser;

const asAdmin = (path: string) => h.api(path, { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
const submitWith = (key: string) =>
  fetch(`${h.baseUrl}/v1/jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `k-${uid()}` },
    body: JSON.stringify({ type: 'summarize', input: { text: 'a job from a key made in the console' } }),
  });

beforeAll(async () => {
  h = await startHarness('console-tenants');
  viewerApp = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: h.log,
    adminKeys: parseAdminKeys(`vera:viewer=${VIEWER_KEY}`, undefined),
    version: 'test',
    webhookSecrets: {},
  });
  await viewerApp.listen({ port: 0, host: '127.0.0.1' });
  viewerBase = `http://127.0.0.1:${(viewerApp.server.address() as { port: number }).port}`;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await viewerApp?.close();
  await h?.close();
});

describe('the tenants page', () => {
  it('creates a tenant and a key shown once; the key works, shows its last use, and is refused once revoked', async () => {
    const { page, errors } = await signIn(browser, h.baseUrl, ADMIN_KEY);
    await openHash(page, '#tenants');
    await textMatches(page, '#tenants-list tbody', /tenant-a/);
    const tenant = `acme-${uid()}`;
    await page.fill('#tenant-create input[name=id]', tenant);
    await page.click('#tenant-create button[type=submit]');
    await textMatches(page, '#tenant-detail-id', new RegExp(tenant));
    await textMatches(page, '#tenant-keys tbody', /no key/);

    // A bad name: the problem names the field, and no key is made.
    await page.fill('#tenant-add-key input[name=name]', 'bad name!');
    await page.click('#tenant-add-key button[type=submit]');
    await textMatches(page, '#tenants-error', /400 .*name: a key name is/);
    expect(await page.isVisible('#tenant-new-key')).toBe(false);

    await page.fill('#tenant-add-key input[name=name]', 'billing-service');
    await page.click('#tenant-add-key button[type=submit]');
    await textMatches(page, '#tenant-new-key', /shown this once/);
    const key = (await page.textContent('#tenant-new-key-value'))!;
    expect(key).toMatch(/^dj_live_/);
    await textMatches(page, '#tenant-keys tbody tr[data-key="billing-service"]', /billing-servicedj_live_\S+…live.* by adminnever/);

    expect((await submitWith(key)).status).toBe(202);
    // Shown once: a reload (the session survives it) renders no key anywhere.
    await page.reload();
    await page.waitForSelector('#tenant-detail:not([hidden])');
    await textMatches(page, '#tenant-keys tbody tr[data-key="billing-service"] td:nth-child(5)', /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/);
    expect(await page.content()).not.toContain(key);

    await page.click('#tenant-keys button.key-revoke[data-key="billing-service"]');
    await textMatches(page, '#tenant-keys tbody tr[data-key="billing-service"]', /revoked.*by admin/);
    expect(await page.isVisible('#tenant-keys button.key-revoke[data-key="billing-service"]')).toBe(false);
    expect((await submitWith(key)).status).toBe(401);

    // The entitlement: priority high and an intake limit.
    await page.check('#tenant-settings input[name=mayUseHighPriority]');
    await page.fill('#tenant-settings input[name=intakeRatePerSecond]', '5');
    await page.click('#tenant-settings button[type=submit]');
    await textMatches(page, '#tenant-fields', /priority highallowed.*5\/s, burst 5/);
    const t = (await asAdmin('/v1/admin/tenants')).body.tenants.find((x: { id: string }) => x.id === tenant);
    expect(t).toMatchObject({ mayUseHighPriority: true, intakeRatePerSecond: 5, liveKeys: 0 });
    expect(t.keys).toEqual([expect.objectContaining({ name: 'billing-service', createdBy: 'admin', revokedBy: 'admin' })]);
    await page.screenshot({ path: `${ARTIFACTS}tenants.png`, fullPage: true });
    expect(errors).toEqual([]);
  });

  it('the degradation audit says what changed, field: old → new', async () => {
    const { page, errors } = await signIn(browser, h.baseUrl, ADMIN_KEY);
    await openHash(page, '#degradation');
    await page.waitForSelector('#deg-form');
    await page.check('#deg-form input[name=paused][value=low]');
    await page.fill('#deg-form input[name=reason]', 'provider brown-out');
    await page.click('#deg-form button[type=submit]');
    const row = await textMatches(page, '#deg-audit tbody tr:first-child', /pausedPriorities: \[\] → \[low\]/);
    expect(row).toContain('provider brown-out');
    expect(row).not.toContain('{"');
    expect(row.length).toBeLessThan(300);
    await page.uncheck('#deg-form input[name=paused][value=low]');
    await page.click('#deg-form button[type=submit]');
    await textMatches(page, '#deg-audit tbody tr:first-child', /pausedPriorities: \[low\] → \[\]/);
    expect(errors).toEqual([]);
  });

  it('a viewer sees no Tenants page and no action button on the bulk-action and job pages', async () => {
    const job = await h.submit('summarize', { text: `viewed, never acted on ${uid()}` });
    await h.waitForStatus(job.body.jobId, 'succeeded');
    const { page, errors } = await signIn(browser, viewerBase, VIEWER_KEY);
    expect(await page.isVisible('#nav a[data-page=tenants]')).toBe(false);
    await openHash(page, `#jobs/${job.body.jobId}`);
    await textMatches(page, '#job-fields', /succeeded/);
    expect(await page.isVisible('#job-actions')).toBe(false);
    expect(await visibleButtons(page)).toEqual(['Search']);
    await openHash(page, '#bulk');
    await page.waitForSelector('#page-bulk:not([hidden])');
    expect(await visibleButtons(page)).toEqual([]);
    await openHash(page, '#tenants');
    // The API refuses the page's data; the page has no action to offer anyway.
    await textMatches(page, '#tenants-error', /403/);
    expect(await visibleButtons(page)).toEqual([]);
    expect(errors).toEqual([]);
  });
});
