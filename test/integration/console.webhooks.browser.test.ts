// The console's Webhook deliveries page (issue 38 §8), over HTTP and in a real browser: what
// each inbound delivery did, filtered by source, event and outcome (a redelivery is a
// `duplicate`, another body under a known webhook-id a `conflicting` one), keyset pages, and
// never the event's data. Bad filters and forged cursors are problems naming the field.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { listWebhookDeliveries } from '../../client/index.js';
import { startHarness, uid, WEBHOOK_SECRET, type Harness } from '../support/harness.js';
import {
  ARTIFACTS,
  BILLING_SECRET,
  OPERATOR_KEY,
  VIEWER_KEY,
  expectProblemNaming,
  openPage,
  startConsoleStack,
  textMatches,
  visibleButtons,
  type ConsoleStack,
} from '../support/console-ops.js';

let h: Harness;
let c: ConsoleStack;
const ids = { ping: `msg_${uid()}`, early: `msg_${uid()}`, clash: `msg_${uid()}`, invoice: `msg_${uid()}` };
const SECRET_TEXT = `private-transcript-${uid()}`;

/** Posts a Standard Webhooks request to this API, as a provider does. */
async function deliver(source: 'sim' | 'billing', id: string, body: object): Promise<number> {
  const raw = JSON.stringify(body);
  const at = new Date();
  const res = await fetch(`${c.base}/v1/webhooks/${source}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(source === 'sim' ? WEBHOOK_SECRET : BILLING_SECRET).sign(id, at, raw),
    },
    body: raw,
  });
  await res.text();
  return res.status;
}

beforeAll(async () => {
  h = await startHarness('console-webhooks');
  c = await startConsoleStack(h, defaultJobRegistry);
  const ping = { type: 'test.ping', data: { n: 1 } };
  expect(await deliver('sim', ids.ping, ping)).toBeLessThan(300);
  expect(await deliver('sim', ids.ping, ping)).toBeLessThan(300); // the provider's redelivery
  expect(
    await deliver('sim', ids.early, {
      type: 'transcription.completed',
      data: { id: `tr_${uid()}`, status: 'completed', text: SECRET_TEXT },
    }),
  ).toBeLessThan(300);
  expect(await deliver('sim', ids.clash, { type: 'test.ping', data: { n: 2 } })).toBeLessThan(300);
  expect(await deliver('sim', ids.clash, { type: 'test.ping', data: { n: 3 } })).toBe(409); // same webhook-id, other body
  expect(await deliver('billing', ids.invoice, { type: 'invoice.paid', data: { id: 'in_1' } })).toBeLessThan(300);
});
afterAll(async () => {
  await c?.close();
  await h?.close();
});

describe('GET /v1/admin/webhook-deliveries', () => {
  it('filters by source, event and outcome, pages by an opaque cursor, and shows no event data', async () => {
    const all = await c.call('GET', '/v1/admin/webhook-deliveries', undefined, VIEWER_KEY);
    expect(all.status).toBe(200);
    expect(all.body.items.map((d: { webhookId: string }) => d.webhookId).sort()).toEqual(Object.values(ids).sort());
    expect(JSON.stringify(all.body)).not.toContain(SECRET_TEXT);
    const by = async (q: string) =>
      (await c.call('GET', `/v1/admin/webhook-deliveries?${q}`)).body.items.map((d: { webhookId: string }) => d.webhookId);
    expect(await by('source=billing')).toEqual([ids.invoice]);
    expect(await by('event=transcription.completed')).toEqual([ids.early]);
    expect(await by('outcome=unmatched')).toEqual([ids.early]);
    expect(await by('outcome=duplicate')).toEqual([ids.ping]);
    expect(await by('outcome=conflicting')).toEqual([ids.clash]);
    expect(await by('source=sim&outcome=ignored')).toEqual(expect.arrayContaining([ids.ping, ids.clash]));
    // Keyset pages: three, then the last one; together the whole list, in order, no overlap.
    const first = await c.call('GET', '/v1/admin/webhook-deliveries?limit=3');
    expect(first.body.items).toHaveLength(3);
    const second = await c.call('GET', `/v1/admin/webhook-deliveries?limit=3&cursor=${first.body.nextCursor}`);
    expect(second.body.items).toHaveLength(1);
    expect(second.body.nextCursor).toBeUndefined();
    const paged = [...first.body.items, ...second.body.items].map((d: { webhookId: string }) => d.webhookId);
    expect(paged).toEqual(all.body.items.map((d: { webhookId: string }) => d.webhookId));
  });

  it("refuses an unknown outcome, a forged cursor, another filter's cursor and an unknown filter, naming the field", async () => {
    expectProblemNaming(await c.call('GET', '/v1/admin/webhook-deliveries?outcome=accepted-ish'), 400, 'outcome');
    expectProblemNaming(await c.call('GET', '/v1/admin/webhook-deliveries?cursor=not-a-cursor'), 400, 'cursor');
    const forged = Buffer.from(JSON.stringify({ v: 1, at: '1', s: 'sim', w: 'x', q: 'forged' })).toString('base64url');
    expectProblemNaming(await c.call('GET', `/v1/admin/webhook-deliveries?cursor=${forged}`), 400, 'cursor');
    const page = await c.call('GET', '/v1/admin/webhook-deliveries?limit=1');
    expectProblemNaming(await c.call('GET', `/v1/admin/webhook-deliveries?source=billing&cursor=${page.body.nextCursor}`), 400, 'cursor');
    expectProblemNaming(await c.call('GET', '/v1/admin/webhook-deliveries?limit=0'), 400, 'limit');
    expectProblemNaming(await c.call('GET', '/v1/admin/webhook-deliveries?tenant=x'), 400, 'tenant');
  });
});

describe('webhook deliveries in the client', () => {
  it('filters like the API and refuses a forged cursor or an unknown outcome, naming the field', async () => {
    expect((await listWebhookDeliveries(h.pool, { source: 'billing' })).items.map((d) => d.webhookId)).toEqual([ids.invoice]);
    await expect(listWebhookDeliveries(h.pool, { cursor: 'forged' })).rejects.toMatchObject({
      fields: [expect.objectContaining({ path: 'cursor' })],
    });
    await expect(listWebhookDeliveries(h.pool, { outcome: 'lost' })).rejects.toMatchObject({
      fields: [expect.objectContaining({ path: 'outcome' })],
    });
  });
});

describe('the Webhook deliveries page in a browser', () => {
  it('lists the deliveries and filters them by source, event and outcome; a viewer sees no action', async () => {
    const { context, page } = await c.signedIn(VIEWER_KEY);
    await openPage(page, '#webhooks');
    for (const id of Object.values(ids)) await textMatches(page, '#wh-list tbody', new RegExp(id));
    expect(await page.textContent('#wh-list tbody')).not.toContain(SECRET_TEXT);
    await textMatches(page, `#wh-list tbody tr[data-webhook-id="${ids.ping}"]`, /ignored2 \(redelivered/);
    await textMatches(page, `#wh-list tbody tr[data-webhook-id="${ids.clash}"]`, /1 refused \(other body\)/);

    const rows = () =>
      page.$$eval('#wh-list tbody tr[data-webhook-id]', (trs) =>
        trs.map((tr) => (tr as unknown as { dataset: { webhookId: string } }).dataset.webhookId),
      );
    const filter = async (source: string, event: string, outcome: string, expected: string[]) => {
      await page.fill('#wh-filter input[name=source]', source);
      await page.fill('#wh-filter input[name=event]', event);
      await page.selectOption('#wh-filter select[name=outcome]', outcome);
      await page.click('#wh-filter button[type=submit]');
      // Wait for exactly the expected rows: a count alone matches the previous filter's list
      // when both hold one row.
      await page.waitForFunction(
        (want) => {
          const doc = (
            globalThis as unknown as {
              document: { querySelectorAll(s: string): ArrayLike<{ getAttribute(a: string): string | null }> };
            }
          ).document;
          const got = Array.from(doc.querySelectorAll('#wh-list tbody tr[data-webhook-id]'), (tr) => tr.getAttribute('data-webhook-id'));
          return got.length === want.length && want.every((id) => got.includes(id));
        },
        expected,
        { timeout: 30_000, polling: 250 },
      );
      expect((await rows()).sort()).toEqual([...expected].sort());
    };
    await filter('billing', '', '', [ids.invoice]);
    await filter('', 'transcription.completed', '', [ids.early]);
    await filter('sim', '', 'duplicate', [ids.ping]);
    await filter('', '', 'conflicting', [ids.clash]);
    await filter('', '', 'unmatched', [ids.early]);
    await page.screenshot({ path: `${ARTIFACTS}webhook-deliveries.png`, fullPage: true });
    for (const b of await visibleButtons(page)) expect(['List'], `visible to a viewer: ${b}`).toContain(b);
    await context.close();

    // An operator pages through them, three at a time.
    const op = await c.signedIn(OPERATOR_KEY);
    await openPage(op.page, '#webhooks');
    await op.page.fill('#wh-filter input[name=limit]', '3');
    await op.page.click('#wh-filter button[type=submit]');
    await textMatches(op.page, '#wh-page', /^page 1$/);
    await op.page.click('#wh-next');
    await textMatches(op.page, '#wh-page', /^page 2, the last$/);
    expect(await op.page.$$eval('#wh-list tbody tr[data-webhook-id]', (trs) => trs.length)).toBe(1);
    await op.context.close();
    expect(c.pageErrors).toEqual([]);
  });
});
