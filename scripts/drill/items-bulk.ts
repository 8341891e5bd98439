import { check, http, submit, uid, waitForStatus, waitUntil, type DrillItem } from './support.js';
import type { DrillStack } from './stack.js';

const admin = (s: DrillStack, path: string, body?: unknown) => http(s, path, { admin: true, body });

/**
 * Item 13 (issue 38 §3): a bulk cancel by filter touches exactly what its filter matches, refuses
 * a filter matching more than its limit, holds its rate, and leaves an audit row per job.
 */
export const bulkCancel: DrillItem = {
  item: '13 bulk cancel by filter',
  about: 'a bulk cancel by tag previews, refuses more than its limit, cancels exactly its jobs at its rate; others untouched',
  async run(s) {
    const batch = `drill-${uid()}`;
    const other = `drill-${uid()}`;
    const delayed = (tag: string) =>
      submit(s, 'summarize', { text: 'delayed for the bulk cancel drill' }, `drill-${uid()}`, {
        delaySeconds: 3_600,
        tags: { batch: tag },
      });
    const inside: string[] = [];
    const outside: string[] = [];
    for (let i = 0; i < 30; i++) inside.push((await delayed(batch)).body.jobId);
    for (let i = 0; i < 5; i++) outside.push((await delayed(other)).body.jobId);
    const filter = { tag: `batch:${batch}` };

    const preview = await admin(s, '/v1/admin/bulk-actions', { action: 'cancel', filter, dryRun: true });
    check(preview.status === 200 && preview.body.count === 30, `preview ${preview.status} ${JSON.stringify(preview.body).slice(0, 200)}`);
    const over = await admin(s, '/v1/admin/bulk-actions', { action: 'cancel', filter, limit: 29 });
    check(over.status === 422 && over.body.errors?.[0]?.path === 'filter', `over the limit answered ${over.status}`);

    const ratePerMinute = 600; // burst 10
    const start = await admin(s, '/v1/admin/bulk-actions', {
      action: 'cancel',
      filter,
      limit: 30,
      ratePerMinute,
      batchSize: 5,
      concurrency: 2,
    });
    check(start.status === 202 && start.body.bulkId, `start answered ${start.status}`);
    const done = await waitUntil('the bulk cancel to complete', async () => {
      const b = (await admin(s, `/v1/admin/bulk-actions/${start.body.bulkId}`)).body;
      return b?.finishedAt ? b : undefined;
    });
    check(done.state === 'completed' && done.counts.applied === 30, `bulk action ${done.state}, ${JSON.stringify(done.counts)}`);
    const targets = new Set(done.items.map((i: { targetId: string }) => i.targetId));
    check(targets.size === 30 && inside.every((id) => targets.has(id)), 'the audit rows name other jobs than the filter matched');
    const times = done.items.map((i: { grantedAt: string }) => Date.parse(i.grantedAt)).sort((a: number, b: number) => a - b);
    let worst = 0;
    for (let i = 0; i < times.length; i++)
      for (let j = i; j < times.length; j++) worst = Math.max(worst, j - i + 1 - (10 + ((times[j] - times[i]) * ratePerMinute) / 60_000));
    check(worst <= 1e-9, `the rate was exceeded by ${worst} item(s) in some window`);
    for (const id of inside) await waitForStatus(s, id, 'cancelled');
    const untouched = await Promise.all(outside.map(async (id) => (await http(s, `/v1/jobs/${id}`)).body.status));
    check(
      untouched.every((st) => st === 'scheduled'),
      `jobs outside the filter: ${untouched.join(', ')}`,
    );
    return {
      done: '30 delayed jobs tagged for the cancel and 5 tagged otherwise; preview; limit 29 refused; cancel at 600/min',
      observed: `preview 30; 422 naming filter over the limit; 30 cancelled with one audit row each within burst + rate x t; the 5 others still scheduled`,
    };
  },
};
