// The console's Failed notifications page (issue 38 §8) in a real browser: the failed outbox
// rows with their evidence and never their payload (the recipient's address); an operator
// retries one (it is delivered, once) and discards another with a reason; a viewer sees the
// evidence and no action, and the API refuses the viewer's actions anyway.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { startHarness, waitFor, type Harness } from '../support/harness.js';
import {
  ARTIFACTS,
  OPERATOR_KEY,
  VIEWER_KEY,
  openPage,
  startConsoleStack,
  textMatches,
  visibleButtons,
  type ConsoleStack,
} from '../support/console-ops.js';

let h: Harness;
let c: ConsoleStack;
const rows: Record<'retry' | 'discard', { jobId: string; id: string }> = {} as never;

/** A summarize job whose notification the upstream refuses for good (400), run to its end. */
async function jobWithRefusedNotification(email: string): Promise<{ jobId: string; id: string }> {
  await h.simFault({ path: '/v1/notifications', times: 1, status: 400 });
  const r = await h.submit('summarize', { text: 'Done, but the e-mail bounced.', notifyEmail: email });
  await h.temporal.workflow.getHandle(r.body.jobId).result();
  const id = (await h.pool.query('SELECT id FROM outbox WHERE job_id = $1', [r.body.jobId])).rows[0].id as string;
  return { jobId: r.body.jobId as string, id };
}

beforeAll(async () => {
  h = await startHarness('console-notifications', { workers: 1 });
  c = await startConsoleStack(h, defaultJobRegistry);
  rows.retry = await jobWithRefusedNotification('bounce-retry@example.com');
  rows.discard = await jobWithRefusedNotification('bounce-discard@example.com');
});
afterAll(async () => {
  await c?.close();
  await h?.close();
});

describe('the Failed notifications page in a browser', () => {
  it('a viewer sees the evidence, not the payload, and no action; the API refuses its actions', async () => {
    const { context, page } = await c.signedIn(VIEWER_KEY);
    await openPage(page, '#notifications');
    for (const r of Object.values(rows)) await page.waitForSelector(`#nt-list tbody tr[data-id="${r.id}"]`, { timeout: 90_000 });
    await page.click(`#nt-list tbody tr[data-id="${rows.retry.id}"] a`);
    await textMatches(page, '#nt-fields', /invalid_request/);
    const shown = (await page.textContent('#nt-fields')) ?? '';
    expect(shown).toMatch(/HTTP status400/);
    expect(shown).toContain(rows.retry.jobId);
    expect((await page.content()).includes('bounce-retry@example.com')).toBe(false);
    expect(await page.isVisible('#nt-retry')).toBe(false);
    expect(await page.isVisible('#nt-discard')).toBe(false);
    for (const b of await visibleButtons(page)) expect(['List'], `visible to a viewer: ${b}`).toContain(b);
    await context.close();
    expect((await c.call('POST', `/v1/admin/outbox/${rows.retry.id}/replay`, {}, VIEWER_KEY)).status).toBe(403);
    expect((await c.call('POST', `/v1/admin/outbox/${rows.retry.id}/discard`, { reason: 'x' }, VIEWER_KEY)).status).toBe(403);
    expect((await h.pool.query(`SELECT state FROM outbox WHERE id = $1`, [rows.retry.id])).rows[0].state).toBe('failed');
  });

  it('an operator retries one (delivered once) and discards another with a reason', async () => {
    const { context, page } = await c.signedIn(OPERATOR_KEY);
    await openPage(page, `#notifications/${encodeURIComponent(rows.retry.id)}`);
    await textMatches(page, '#nt-fields', /invalid_request/);
    await page.fill('#nt-action input[name=reason]', 'mailbox fixed');
    await page.click('#nt-retry');
    await textMatches(page, '#nt-result', new RegExp(`retrying ${rows.retry.id}: redelivery \\S+ started`));
    await waitFor(
      'the retried notification is delivered',
      async () => (await h.pool.query(`SELECT state FROM outbox WHERE id = $1`, [rows.retry.id])).rows[0].state === 'delivered',
      90_000,
    );
    expect((await h.simEffects()).byKey[`${rows.retry.jobId}:notify-email`]).toMatchObject({ applied: 1 });
    // The failed list no longer holds it; the delivered list does, with who retried it.
    const rowOf = (id: string) => `#nt-list tbody tr[data-id="${id}"]`;
    await page.click('#nt-filter button[type=submit]');
    await page.waitForSelector(rowOf(rows.retry.id), { state: 'detached', timeout: 30_000 });
    expect(await page.isVisible(rowOf(rows.discard.id))).toBe(true);
    await page.selectOption('#nt-filter select[name=state]', 'delivered');
    await page.click('#nt-filter button[type=submit]');
    await textMatches(page, rowOf(rows.retry.id), /delivered/);
    await page.selectOption('#nt-filter select[name=state]', 'failed');

    await openPage(page, `#notifications/${encodeURIComponent(rows.discard.id)}`);
    await textMatches(page, '#nt-id', new RegExp(`^${rows.discard.id}$`));
    await page.fill('#nt-action input[name=reason]', '');
    await page.click('#nt-discard');
    await textMatches(page, '#nt-action-error', /a reason is required/);
    await page.fill('#nt-action input[name=reason]', 'customer left');
    await page.click('#nt-discard');
    await textMatches(page, '#nt-result', new RegExp(`discarded ${rows.discard.id}`));
    await textMatches(page, '#nt-fields', /discarded by otto at .*: customer left/);
    expect(await page.isDisabled('#nt-retry')).toBe(true);
    await page.screenshot({ path: `${ARTIFACTS}failed-notifications.png`, fullPage: true });
    expect((await c.call('GET', `/v1/admin/outbox/${rows.discard.id}`)).body).toMatchObject({
      state: 'discarded',
      resolvedBy: 'otto',
      reason: 'customer left',
    });
    expect((await h.simEffects()).byKey[`${rows.discard.jobId}:notify-email`]?.applied ?? 0).toBe(0);
    await context.close();
    expect(c.pageErrors).toEqual([]);
  });
});
