import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { builtInJobTypes } from '../../jobs/index.js';
import { resolveThirdParty } from '../../scripts/lib/third-party.js';
import { notifyDoneJobType } from '../fixtures/jobs/notify-done/activities.js';
import { operatorKey, startHarness, TENANTS, waitFor, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// E-mail over real SMTP (mailpit), from a real worker process logging at its most verbose.
const REGISTRY = fileURLToPath(new URL('../fixtures/jobs/notify-done/registry.ts', import.meta.url));
const SMTP_PASSWORD = 'smtp-pass-SECRETMARKER-0123456789';
const FROM_DOMAIN = 'acme.example';

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

let h: Harness;
let worker: WorkerProcess | undefined;
let mailpit: ChildProcess | undefined;
let mailpitApi = '';
let dataDir = '';
let webhookSecret = '';
beforeAll(async () => {
  const bin = await resolveThirdParty('mailpit');
  const [smtpPort, httpPort] = [await freePort(), await freePort()];
  dataDir = mkdtempSync(path.join(tmpdir(), 'notify-smtp-'));
  mailpit = spawn(
    bin,
    [
      ...['--smtp', `127.0.0.1:${smtpPort}`, '--listen', `127.0.0.1:${httpPort}`, '--database', path.join(dataDir, 'mail.db')],
      ...['--smtp-auth-accept-any', '--smtp-auth-allow-insecure', '--disable-version-check'],
    ],
    { stdio: 'ignore' },
  );
  mailpitApi = `http://127.0.0.1:${httpPort}`;
  await waitFor('mailpit to answer', async () => (await fetch(`${mailpitApi}/api/v1/messages`).catch(() => undefined))?.ok, 60_000);
  h = await startHarness('notify-smtp', { workers: 0, jobTypes: createJobRegistry([...builtInJobTypes, notifyDoneJobType]) });
  worker = await spawnWorker(h, {
    DURABLE_JOBS_JOBS: REGISTRY,
    SMTP_URL: `smtp://jobs:${SMTP_PASSWORD}@127.0.0.1:${smtpPort}`,
    SMTP_FROM: `Acme Jobs <jobs@${FROM_DOMAIN}>`,
    COMPLETION_WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'trace',
  });
}, 600_000);
afterAll(async () => {
  await worker?.kill();
  await h?.close();
  mailpit?.kill('SIGTERM');
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

interface MailpitMessage {
  MessageID: string;
  Subject: string;
  To: Array<{ Address: string }>;
  From: { Address: string };
}
const messagesWithId = async (messageId: string): Promise<MailpitMessage[]> => {
  const r = await fetch(`${mailpitApi}/api/v1/search?query=${encodeURIComponent(`message-id:"${messageId}"`)}`);
  return ((await r.json()) as { messages: MailpitMessage[] }).messages.filter((m) => m.MessageID === messageId);
};
const expectedMessageId = (jobId: string) => `${createHash('sha256').update(`${jobId}:notify-email`).digest('hex')}@${FROM_DOMAIN}`;

describe('e-mail over SMTP', () => {
  it('arrives once with the Message-ID derived from the effect key', async () => {
    const r = await h.submit('notify-done', { orderId: 'mail-1', email: 'buyer@example.com' });
    expect(r.status).toBe(202);
    const jobId = r.body.jobId as string;
    await h.temporal.workflow.getHandle(jobId).result();
    expect((await h.api(`/v1/jobs/${jobId}`)).body).toMatchObject({ status: 'succeeded', notification: 'sent' });
    const found = await waitFor('the message in mailpit', async () => {
      const m = await messagesWithId(expectedMessageId(jobId));
      return m.length > 0 && m;
    });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      Subject: 'Order mail-1 done',
      To: [{ Address: 'buyer@example.com' }],
      From: { Address: `jobs@${FROM_DOMAIN}` },
    });
    const effect = (await h.pool.query('SELECT state, provider_id, upstream FROM effects WHERE effect_key = $1', [`${jobId}:notify-email`]))
      .rows[0];
    expect(effect).toMatchObject({ state: 'succeeded', provider_id: `<${expectedMessageId(jobId)}>` });
    // The simulator was never asked: the SMTP target replaced it.
    expect((await h.simEffects()).byKey[`${jobId}:notify-email`]).toBeUndefined();
  });

  it('never writes the SMTP password or a webhook secret to logs, histories, the ledger or failed notifications', async () => {
    const set = await h.api(`/v1/admin/tenants/${TENANTS.a.id}/completion-webhook`, {
      method: 'PUT',
      body: { url: 'http://127.0.0.1:9/refused' },
      tenant: null,
      headers: { authorization: `Bearer ${operatorKey('dana')}` },
    });
    webhookSecret = set.body.secret as string;
    const secretPart = webhookSecret.slice('whsec_'.length);
    // The webhook's receiver is down (connection refused): retried, then a failed notification.
    const r = await h.submit('notify-done', { orderId: 'mail-2', email: 'second@example.com' });
    const jobId = r.body.jobId as string;
    await h.temporal.workflow.getHandle(jobId).result();
    const outbox = (await h.pool.query('SELECT kind, state FROM outbox WHERE job_id = $1 ORDER BY kind', [jobId])).rows;
    // The e-mail went first and was delivered; the webhook's retries ran out.
    expect(outbox).toEqual([
      { kind: 'completion-webhook', state: 'failed' },
      { kind: 'email', state: 'delivered' },
    ]);
    const history = JSON.stringify(await h.temporal.workflow.getHandle(jobId).fetchHistory());
    const rows = await h.pool.query(
      `SELECT (SELECT coalesce(json_agg(o), '[]') FROM outbox o WHERE job_id = $1)::text
           || (SELECT coalesce(json_agg(e), '[]') FROM effects e WHERE job_id = $1)::text
           || (SELECT coalesce(json_agg(a), '[]') FROM job_attempts a WHERE job_id = $1)::text
           || (SELECT coalesce(json_agg(d), '[]') FROM dead_letters d)::text AS all`,
      [jobId],
    );
    for (const [where, text] of [
      ['worker log', worker!.output()],
      ['history', history],
      ['database rows', rows.rows[0].all as string],
    ] as const) {
      expect(text.length, where).toBeGreaterThan(0);
      expect(text.includes('SECRETMARKER'), `${where} holds the SMTP password`).toBe(false);
      expect(text.includes(secretPart), `${where} holds the webhook secret`).toBe(false);
    }
    expect(worker!.output()).toContain(jobId);
  });
});
