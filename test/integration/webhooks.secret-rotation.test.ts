import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { webhookSecretsFrom } from '../../lib/webhook-secrets.js';
import { buildApp } from '../../server/app.js';
import { createWebhookKeyring, reloadWebhookSecretsOnSighup } from '../../server/webhook-keyring.js';
import { ADMIN_KEY, startHarness, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
let app: FastifyInstance | undefined;
let stopReloading: (() => void) | undefined;
const flows: Array<{ stop(): Promise<number[]> }> = [];
const dir = mkdtempSync(path.join(tmpdir(), 'dj-secrets-'));
beforeAll(async () => {
  h = await startHarness('webhook-rotation');
});
afterAll(async () => {
  for (const f of flows) await f.stop();
  stopReloading?.();
  await app?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

const secret = (label: string) => `whsec_${Buffer.from(`rotation-${label}-webhook-secret-0123`).toString('base64')}`;

async function post(url: string, signWith: string): Promise<number> {
  const id = `msg_${uid()}`;
  const at = new Date();
  const body = JSON.stringify({ type: 'test.ping', data: { n: 1 } });
  const res = await fetch(`${url}/v1/webhooks/acme`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(signWith).sign(id, at, body),
    },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

/** A provider sending continuously with `signWith()` until stopped; every answer is kept. */
function flow(url: string, signWith: () => string) {
  const statuses: number[] = [];
  let running = true;
  const senders = Array.from({ length: 4 }, async () => {
    // A dropped connection counts as a failed delivery (0), like any answer but 202.
    while (running) statuses.push(await post(url, signWith()).catch(() => 0));
  });
  const f = {
    statuses,
    async stop() {
      running = false;
      await Promise.all(senders);
      return statuses;
    },
  };
  flows.push(f);
  return f;
}

describe('webhook secret rotation without a restart (WEBHOOK_SECRETS_FILE + SIGHUP)', () => {
  it('accepts old and new during the overlap, drops no request while secrets change, and refuses the old one afterwards', async () => {
    const [oldSecret, newSecret] = [secret('old'), secret('new')];
    const file = path.join(dir, 'webhook-secrets');
    writeFileSync(file, `# provider acme\nacme=${oldSecret}\n`);
    // What server/main.ts does: the keyring from the configuration, re-read on SIGHUP.
    const load = () => webhookSecretsFrom('', file);
    const keyring = createWebhookKeyring(load());
    const logged: Array<{ level: string; line: string }> = [];
    const log = {
      info: (...a: unknown[]) => logged.push({ level: 'info', line: JSON.stringify(a) }),
      error: (...a: unknown[]) => logged.push({ level: 'error', line: JSON.stringify(a) }),
    };
    stopReloading = reloadWebhookSecretsOnSighup(keyring, load, log as never);
    app = buildApp({
      jobTypes: defaultJobRegistry,
      pool: h.pool,
      temporal: h.temporal,
      jobs: h.jobs,
      log: h.log,
      adminApiKey: ADMIN_KEY,
      version: 'test',
      webhookSecrets: keyring,
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const sighup = () => process.kill(process.pid, 'SIGHUP');

    expect(await post(url, newSecret)).toBe(401); // not configured yet
    const signedOld = flow(url, () => oldSecret); // the provider still signs with the old secret

    // 1. The new secret beside the old one; SIGHUP. Requests keep flowing meanwhile.
    await waitFor('some deliveries before the rotation', async () => signedOld.statuses.length >= 10);
    writeFileSync(file, `acme=${newSecret}|${oldSecret}\n`);
    sighup();
    await waitFor('the new secret to verify', async () => (await post(url, newSecret)) === 202);
    // 2. The provider switches to the new secret while deliveries signed with the old one are still in flight.
    const signedNew = flow(url, () => newSecret);
    const n = signedOld.statuses.length;
    await waitFor('deliveries with both secrets during the overlap', async () => signedOld.statuses.length >= n + 10);
    const oldAnswers = await signedOld.stop();
    // 3. The overlap ends: only the new secret; SIGHUP, while new-signed deliveries keep coming.
    writeFileSync(file, `acme=${newSecret}\n`);
    sighup();
    await waitFor('the old secret to stop verifying', async () => (await post(url, oldSecret)) === 401);
    const m = signedNew.statuses.length;
    await waitFor('deliveries after the rotation', async () => signedNew.statuses.length >= m + 10);
    const newAnswers = await signedNew.stop();

    // Not one delivery failed while the secrets changed twice under them.
    expect(oldAnswers.length).toBeGreaterThan(20);
    expect(oldAnswers.filter((s) => s !== 202)).toEqual([]);
    expect(newAnswers.filter((s) => s !== 202)).toEqual([]);
    expect(await post(url, oldSecret)).toBe(401);
    expect(await post(url, newSecret)).toBe(202);

    expect(logged.filter((l) => l.level === 'info')).toHaveLength(2);

    // A file that does not parse keeps the secrets in use, and says why.
    writeFileSync(file, `acme=${oldSecret}|not-a-secret\n`);
    sighup();
    await waitFor('the broken file to be read and refused', async () => logged.some((l) => l.level === 'error'));
    expect(await post(url, newSecret)).toBe(202);
    expect(await post(url, oldSecret)).toBe(401);
    // The reload logs never carry a secret.
    for (const needle of [oldSecret, newSecret, oldSecret.slice(6), newSecret.slice(6)])
      expect(logged.some((l) => l.line.includes(needle))).toBe(false);
  });
});
