import { Webhook } from 'standardwebhooks';
import { ensureSchedules, scanInputFor, scheduleIdFor, type ScheduleDeclaration } from '../../services/schedules.js';
import type { ScanInput, ScanReport } from '../../contract/scan.js';
import type { DrillStack } from './stack.js';
import { DRILL_WEBHOOK_SECRET } from './stack.js';
import { check, http, simEffects, simFault, simReset, submit, uid, waitForStatus, waitUntil, type DrillItem } from './support.js';

const admin = (s: DrillStack, path: string, body?: unknown) => http(s, path, { admin: true, body });

export const deadLetters: DrillItem = {
  item: '5 dead letter and replay',
  about: 'a purchase whose receipt fails to the attempt cap dead-letters with evidence; dry run and replay reuse the charge',
  async run(s) {
    await simReset(s);
    // The receipt fails for all 8 attempts of the cap: the charge succeeded, the job cannot finish.
    await simFault(s, { path: '/v1/receipts', times: 8, status: 503, retryAfter: '1' });
    const r = await submit(s, 'purchase', {
      amountCents: 4200,
      currency: 'EUR',
      customer: `cus_${uid()}`,
      receiptEmail: 'drill@example.com',
    });
    const failed = await waitForStatus(s, r.body.jobId, 'dead_lettered', 180_000);
    check(
      failed.attempts >= 8 && failed.deadLetterId,
      `dead-lettered after ${failed.attempts} attempts, dead letter ${failed.deadLetterId}`,
    );
    const dl = (await admin(s, `/v1/dead-letters/${failed.deadLetterId}`)).body;
    check(dl?.state === 'open' && dl.errorClass === 'upstream_unavailable', `dead letter ${JSON.stringify(dl).slice(0, 200)}`);

    const dry = await admin(s, '/v1/dead-letters/replay', { ids: [failed.deadLetterId], dryRun: true });
    const preview = JSON.stringify(dry.body);
    check(
      dry.status === 200 && /charge[^}]*reuse/.test(preview) && /receipt[^}]*execute/.test(preview),
      `dry run ${dry.status} ${preview.slice(0, 300)}`,
    );
    const start = await admin(s, '/v1/dead-letters/replay', { ids: [failed.deadLetterId], concurrency: 1, ratePerMinute: 60 });
    check(start.status === 202 && start.body.replayId, `replay answered ${start.status}`);
    const progress = await waitUntil('the replay to finish', async () => {
      const p = (await admin(s, `/v1/dead-letters/replays/${start.body.replayId}`)).body;
      return ['completed', 'stopped', 'halted'].includes(p?.state) ? p : undefined;
    });
    const after = (await admin(s, `/v1/dead-letters/${failed.deadLetterId}`)).body;
    const original = await s.temporal.workflow.getHandle(r.body.jobId).describe();
    const effects = await simEffects(s);
    check(progress.state === 'completed' && after.state === 'replayed', `replay ${progress.state}, dead letter ${after.state}`);
    check(
      original.status.name === 'FAILED' && (await http(s, `/v1/jobs/${r.body.jobId}`)).body.status === 'dead_lettered',
      'the original job or its history changed',
    );
    check(
      effects.byKey[`${r.body.jobId}:charge`].applied === 1 && effects.byKey[`${r.body.jobId}:receipt`].applied === 1,
      'an effect was applied other than once',
    );
    return {
      done: 'purchase whose receipt fails 8 times (the attempt cap); dry run; replay with concurrency 1 at 60/min',
      observed: `dead letter after ${failed.attempts} attempts with evidence; dry run charge=reuse, receipt=execute; replay completed, dead letter replayed, original run still FAILED; charge applied once`,
    };
  },
};

export const schedules: DrillItem = {
  item: '6 schedules and missed windows',
  about: 'the compensation scan fills a missed window of a paused schedule once; a duplicate trigger makes no second job',
  async run(s) {
    const HOUR = 3_600_000;
    const decls: ScheduleDeclaration[] = [
      {
        kind: 'job',
        name: 'digest',
        jobType: 'digest',
        description: 'drill hourly digest',
        timing: { every: HOUR },
        overlap: 'BUFFER_ALL',
        catchupWindowMs: 60_000,
        paused: true,
      },
    ];
    await ensureSchedules(s.temporal, s.taskQueue, decls);
    const handle = s.temporal.schedule.getHandle(scheduleIdFor(s.taskQueue, 'digest'));
    try {
      const created = (await handle.describe()).info.createdAt.getTime();
      const run = (input: ScanInput) =>
        s.temporal.workflow.execute('compensationScan', {
          taskQueue: s.taskQueue,
          workflowId: `drill-scan-${uid()}`,
          args: [input],
        }) as Promise<ScanReport>;
      // An explicit "now" two hours and ten minutes on: the paused schedule missed its windows.
      const input = scanInputFor(decls, s.taskQueue, {
        now: new Date(created + 2 * HOUR + 10 * 60_000).toISOString(),
        windowGraceMs: 5 * 60_000,
      });
      const first = await run(input);
      const second = await run(input);
      check(first.windowsFilled >= 2 && second.windowsFilled === 0, `scan filled ${first.windowsFilled}, then ${second.windowsFilled}`);
      const jobsBefore = (await s.pool.query(`SELECT count(*)::int AS n FROM job_intents WHERE job_type = 'digest'`)).rows[0].n;
      // Triggering the trigger again for a window already filled creates nothing new.
      const windows = (
        await s.pool.query<{ window_start: Date }>(
          `SELECT window_start FROM schedule_windows WHERE job_type = 'digest' ORDER BY window_start LIMIT 1`,
        )
      ).rows;
      const again = await s.temporal.workflow.execute('scheduleTrigger', {
        taskQueue: s.taskQueue,
        workflowId: `drill-trigger-${uid()}`,
        args: [{ ...input.schedules[0]!, windowStart: windows[0]!.window_start.toISOString() }],
      });
      void again;
      const jobsAfter = (await s.pool.query(`SELECT count(*)::int AS n FROM job_intents WHERE job_type = 'digest'`)).rows[0].n;
      check(jobsAfter === jobsBefore, `a duplicate trigger made ${jobsAfter - jobsBefore} more jobs`);
      await waitUntil(
        'every digest to succeed',
        async () => (await s.pool.query(`SELECT 1 FROM job_intents WHERE job_type = 'digest' AND status <> 'succeeded'`)).rowCount === 0,
      );
      return {
        done: 'a paused hourly schedule; compensation scan twice with an explicit clock; a duplicate trigger for a filled window',
        observed: `scan filled ${first.windowsFilled} missed windows once (second scan: 0); duplicate trigger created no job; ${jobsAfter} digest jobs all succeeded`,
      };
    } finally {
      await handle.delete().catch(() => undefined);
    }
  },
};

async function postWebhook(s: DrillStack, id: string, body: string, signature?: string) {
  const ts = new Date();
  const sig = signature ?? new Webhook(DRILL_WEBHOOK_SECRET).sign(id, ts, body);
  const res = await fetch(`${s.api}/v1/webhooks/sim`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(ts.getTime() / 1000)),
      'webhook-signature': sig,
    },
    body,
  });
  return { status: res.status, sig };
}

export const webhooks: DrillItem = {
  item: '7 webhooks verified, deduped',
  about: 'forged and tampered signatures get 401; duplicates are processed once; a dropped webhook is replaced by polling',
  async run(s) {
    await simReset(s);
    await simFault(s, { path: '/v1/transcriptions', dropWebhooks: 1 });
    const r = await submit(s, 'transcribe', { audioUrl: `https://media.example/drill-${uid()}.wav` });
    const transcriptionId = await waitUntil(
      'the transcription to start',
      async () =>
        (
          await s.pool.query<{ provider_id: string }>(
            `SELECT provider_id FROM effects WHERE job_id = $1 AND step = 'transcribe' AND provider_id IS NOT NULL`,
            [r.body.jobId],
          )
        ).rows[0]?.provider_id,
    );
    const id = `msg_drill_${uid()}`;
    const body = JSON.stringify({
      type: 'transcription.completed',
      data: { id: transcriptionId, status: 'completed', text: 'delivered by the drill' },
    });
    const forged = await postWebhook(s, `msg_forged_${uid()}`, body, 'v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=');
    const good = await postWebhook(s, id, body);
    const tampered = await postWebhook(s, id, body.replace('drill', 'attacker'), good.sig);
    const dupes = await Promise.all(Array.from({ length: 5 }, () => postWebhook(s, id, body)));
    check(forged.status === 401 && tampered.status === 401, `forged signature → ${forged.status}, tampered body → ${tampered.status}`);
    check(
      good.status < 300 && dupes.every((d) => d.status < 300),
      `deliveries answered ${[good, ...dupes].map((d) => d.status).join(', ')}`,
    );
    const done = await waitForStatus(s, r.body.jobId, 'succeeded');
    const delivery = (await admin(s, `/v1/admin/webhook-deliveries/sim/${id}`)).body;
    check(
      done.result.text === 'delivered by the drill' && done.result.completedVia === 'webhook',
      `job result ${JSON.stringify(done.result)}`,
    );
    check(delivery.timesReceived === 6, `delivery seen ${delivery.timesReceived} times`);
    return {
      done: 'transcribe job; forged signature; valid webhook; tampered body with its signature; 5 concurrent duplicates',
      observed: `forged → 401, tampered → 401; valid → ${good.status}, duplicates → ${[...new Set(dupes.map((d) => d.status))].join('/')}; received 6 times, processed once; job completed via webhook`,
    };
  },
};
