// `welcome-email` against mailpit, an SMTP server no one here wrote: every message exactly once
// (one per Message-ID in mailpit's own store) while the worker is SIGKILLed mid-batch, and while
// the mail server itself is down for 20 s.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStack, type SpawnedWorker, type TestStack } from 'durable-jobs/testing';
import jobs from '../src/jobs.js';
import { startMailpit, type Mailpit } from './third-party.js';
import { waitFor } from './wait.js';

let stack: TestStack;
let mailpit: Mailpit;
beforeAll(async () => {
  mailpit = await startMailpit();
  // The worker processes inherit these: where to send, where to look a message up.
  process.env.SMTP_URL = mailpit.smtpUrl;
  process.env.MAIL_SEARCH_URL = mailpit.url;
  stack = await startTestStack({ jobs });
});
afterAll(async () => {
  await stack?.close();
  await mailpit?.close();
});

async function submitBatch(prefix: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await stack.client.submitJob({
      tenantId: stack.tenantId,
      type: 'welcome-email',
      idempotencyKey: `user-${prefix}-${i}-welcome`,
      input: { userId: `${prefix}-${i}`, email: `${prefix}-${i}@acme.test` },
    });
    ids.push(r.jobId);
  }
  return ids;
}

/** Every job succeeded, mailpit holds exactly one message for each job's Message-ID, and no other message came in. */
async function expectEachSentOnce(jobIds: string[], sent: () => Promise<number>): Promise<void> {
  const done = await Promise.all(jobIds.map((id) => stack.waitForJob(id, 'succeeded', 240_000)));
  const wanted = done.map((j) => (j.result as { messageId: string }).messageId);
  expect(new Set(wanted).size).toBe(jobIds.length);
  const perId = new Map<string, number>();
  for (const m of await mailpit.messages()) perId.set(m.MessageID, (perId.get(m.MessageID) ?? 0) + 1);
  expect(wanted.map((id) => perId.get(id) ?? 0)).toEqual(wanted.map(() => 1));
  expect(await sent()).toBe(jobIds.length);
}

/** How many messages mailpit received since this was made. */
async function counter(): Promise<() => Promise<number>> {
  const before = (await mailpit.messages()).length;
  return async () => (await mailpit.messages()).length - before;
}

let local: Promise<unknown> | undefined;
/** A worker in this process (started once): it takes over what the killed processes left. */
const localWorker = () => (local ??= stack.startWorker());

it('sends 50 welcome e-mails once each while the worker is SIGKILLed twice mid-batch', async () => {
  const sent = await counter();
  const jobIds = await submitBatch('kill', 50);
  let killedAt = 0;
  for (const kill of [1, 2]) {
    const worker: SpawnedWorker = await stack.spawnWorker('src/jobs.ts');
    const atLeast = killedAt + 5;
    await waitFor(
      `${atLeast} messages in mailpit before kill ${kill}`,
      async () => ((await sent()) >= atLeast ? true : undefined),
      180_000,
    );
    await worker.kill('SIGKILL');
    killedAt = await sent();
    expect(killedAt).toBeLessThan(50); // killed during the batch, not after it
  }
  // The rest, and the jobs the killed processes held (once their heartbeat times out).
  await localWorker();
  await expectEachSentOnce(jobIds, sent);
}, 480_000);

it('sends every message once across a 20 s mail server outage in the middle of a batch', async () => {
  await localWorker();
  const sent = await counter();
  const jobIds = await submitBatch('outage', 30);
  await waitFor('5 messages in mailpit', async () => ((await sent()) >= 5 ? true : undefined));
  await mailpit.stop('SIGKILL');
  // A deliberate hold: the outage itself. Sends and lookups fail, the jobs retry.
  await new Promise((r) => setTimeout(r, 20_000));
  const during = await Promise.all(jobIds.map((id) => stack.client.getJob(stack.tenantId, id)));
  expect(during.some((j) => j.status !== 'succeeded')).toBe(true); // the outage hit the batch
  await mailpit.start(); // the same ports, the same database file
  await expectEachSentOnce(jobIds, sent);
}, 300_000);
