import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyHash, inputHash, jobIdFor, keyHash, keyIdFor, unkeyed } from '../../lib/ids.js';
import { currentServerSecret, serverSecretFrom, useServerSecret } from '../../lib/secret.js';
import { insertIntent } from '../../store/intents.js';
import { insertTenantKey } from '../../store/tenant-keys.js';
import { insertTenant, upsertTenant } from '../../store/tenants.js';
import { ADMIN_KEY, TENANTS, startHarness, uid, type Harness } from '../support/harness.js';
import { TEST_SERVER_SECRET } from '../support/server-secret.js';

// Security review F5: job IDs, key and input hashes, stored API key hashes and key IDs are
// keyed with the server secret, so none yields its material by guessing; what was derived
// before (unkeyed SHA-256, or an older secret of the list) is still found.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('security-ids');
});
afterAll(async () => {
  await h?.close();
});

const tenant = TENANTS.a.id;
const intentRow = async (jobId: string) =>
  (await h.pool.query<{ key_hash: string; input_hash: string }>('SELECT key_hash, input_hash FROM job_intents WHERE job_id = $1', [jobId]))
    .rows[0];
/** The tenant's intents stored under any hash of this key (every derivation). */
const intentsOfKey = async (key: string) =>
  (
    await h.pool.query<{ job_id: string }>('SELECT job_id FROM job_intents WHERE tenant_id = $1 AND key_hash = ANY($2::text[])', [
      tenant,
      [keyHash(tenant, key), unkeyed.keyHash(tenant, key)],
    ])
  ).rows.map((r) => r.job_id);

/** A duplicate submit's answer: 200, `Idempotent-Replayed`, the existing job's ID. */
function expectReplayOf(r: { status: number; headers: Headers; body: any }, jobId: string): void {
  expect(r.status).toBe(200);
  expect(r.headers.get('idempotent-replayed')).toBe('true');
  expect(r.body.jobId).toBe(jobId);
}

describe('keyed identifiers (F5)', () => {
  it('derives a new job ID, key hash and input hash with the server secret, not the public unkeyed algorithm', async () => {
    const key = `order-${uid()}-summary`;
    const input = { text: 'Keyed identifiers, please.' };
    const r = await h.submit('summarize', input, { key });
    expect(r.status).toBe(202);
    // What a dictionary attack computes with the public algorithm (review row 8) is not the ID.
    expect(r.body.jobId).not.toBe(unkeyed.jobIdFor(tenant, 'summarize', key));
    expect(r.body.jobId).toBe(jobIdFor(tenant, 'summarize', key));
    const row = await intentRow(r.body.jobId);
    expect(row).toEqual({ key_hash: keyHash(tenant, key), input_hash: inputHash('summarize', input) });
    expect(row!.key_hash).not.toBe(unkeyed.keyHash(tenant, key));
    expect(row!.input_hash).not.toBe(unkeyed.inputHash('summarize', input));
    await h.waitForStatus(r.body.jobId, 'succeeded');
  });

  it('a duplicate submit of a job accepted before keyed IDs finds that job under its old ID', async () => {
    const key = `legacy-${uid()}`;
    const input = { text: 'Accepted by the previous release.' };
    // As the previous release's intake stored it (unkeyed), its start not yet confirmed.
    const legacyId = unkeyed.jobIdFor(tenant, 'summarize', key);
    await insertIntent(h.pool, {
      jobId: legacyId,
      tenantId: tenant,
      jobType: 'summarize',
      keyHash: unkeyed.keyHash(tenant, key),
      inputHash: unkeyed.inputHash('summarize', input),
      input,
      priority: 'normal',
    });
    const dup = await h.submit('summarize', input, { key });
    expectReplayOf(dup, legacyId);
    await h.waitForStatus(legacyId, 'succeeded');
    const again = await h.submit('summarize', input, { key });
    expectReplayOf(again, legacyId);
    expect(again.body.status).toBe('succeeded');
    expect(await intentsOfKey(key)).toEqual([legacyId]);
    // The old intent's input hash is compared the way it was derived: another input is still a conflict.
    const other = await h.submit('summarize', { text: 'Something else.' }, { key });
    expect(other.status).toBe(422);
    expect(await intentsOfKey(key)).toEqual([legacyId]);
  });

  it('after a rotation of the secret ([B, A]) a job made under A is found; new jobs derive with B', async () => {
    const before = currentServerSecret();
    const keyA = `rotate-${uid()}`;
    const input = { text: 'Made before the rotation.' };
    const madeUnderA = await h.submit('summarize', input, { key: keyA });
    expect(madeUnderA.status).toBe(202);
    const keyB = `rotate-${uid()}`;
    const underA = jobIdFor(tenant, 'summarize', keyB);
    useServerSecret(serverSecretFrom(`secret-B-for-the-rotation-test-0123456789,${TEST_SERVER_SECRET}`, undefined)!);
    try {
      const dup = await h.submit('summarize', input, { key: keyA });
      expectReplayOf(dup, madeUnderA.body.jobId);
      const fresh = await h.submit('summarize', input, { key: keyB });
      expect(fresh.status).toBe(202);
      expect(fresh.body.jobId).toBe(jobIdFor(tenant, 'summarize', keyB));
      expect(fresh.body.jobId).not.toBe(underA);
      await h.waitForStatus(fresh.body.jobId, 'succeeded');
    } finally {
      useServerSecret(before);
    }
  });

  it('an API key stored as plain SHA-256 still opens the API and is rewritten to its keyed hash on first use', async () => {
    const id = `legacy-tenant-${uid()}`;
    const key = `legacy-tenant-key-${uid()}`;
    await insertTenant(h.pool, id, 'test');
    await insertTenantKey(h.pool, {
      tenantId: id,
      name: 'default',
      keyHash: unkeyed.apiKeyHash(key),
      keyPrefix: null,
      createdBy: 'migration',
    });
    const stored = async () =>
      (await h.pool.query<{ key_hash: string }>('SELECT key_hash FROM tenant_keys WHERE tenant_id = $1', [id])).rows.map((r) => r.key_hash);
    const list = () => h.api('/v1/jobs', { tenant: null, headers: { authorization: `Bearer ${key}` } });
    expect((await list()).status).toBe(200);
    expect(await stored()).toEqual([apiKeyHash(key)]);
    expect(apiKeyHash(key)).not.toBe(unkeyed.apiKeyHash(key));
    expect((await list()).status).toBe(200);
    expect((await h.api('/v1/jobs', { tenant: null, headers: { authorization: `Bearer ${key}-wrong` } })).status).toBe(401);
  });

  it('seeding a key stored under the old hash keeps it (one live key, keyed), and one an operator revoked stays revoked', async () => {
    const id = `seeded-${uid()}`;
    const key = `seeded-key-${uid()}`;
    await insertTenant(h.pool, id, 'seed');
    await insertTenantKey(h.pool, { tenantId: id, name: 'seed', keyHash: unkeyed.apiKeyHash(key), keyPrefix: null, createdBy: 'seed' });
    await upsertTenant(h.pool, id, key);
    const rows = async () =>
      (
        await h.pool.query<{ key_hash: string; revoked: boolean }>(
          'SELECT key_hash, revoked_at IS NOT NULL AS revoked FROM tenant_keys WHERE tenant_id = $1',
          [id],
        )
      ).rows;
    expect(await rows()).toEqual([{ key_hash: apiKeyHash(key), revoked: false }]);

    const revokedId = `seeded-revoked-${uid()}`;
    const revokedKey = `seeded-revoked-key-${uid()}`;
    await insertTenant(h.pool, revokedId, 'seed');
    await insertTenantKey(h.pool, {
      tenantId: revokedId,
      name: 'seed',
      keyHash: unkeyed.apiKeyHash(revokedKey),
      keyPrefix: null,
      createdBy: 'seed',
    });
    await h.pool.query(`UPDATE tenant_keys SET revoked_at = now(), revoked_by = 'alice' WHERE tenant_id = $1`, [revokedId]);
    await upsertTenant(h.pool, revokedId, revokedKey);
    expect((await h.pool.query('SELECT 1 FROM tenant_keys WHERE tenant_id = $1 AND revoked_at IS NULL', [revokedId])).rowCount).toBe(0);
    expect((await h.api('/v1/jobs', { tenant: null, headers: { authorization: `Bearer ${revokedKey}` } })).status).toBe(401);
  });

  it('the key ID in whoami and audit rows is keyed, not a prefix of the plain SHA-256 of the key', async () => {
    const r = await h.api('/v1/admin/whoami', { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(r.status).toBe(200);
    expect(r.body.keyId).toBe(keyIdFor(ADMIN_KEY));
    expect(r.body.keyId).not.toBe(createHash('sha256').update(ADMIN_KEY).digest('hex').slice(0, 12));
  });
});

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));

function run(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX, [script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the server secret at start', () => {
  // Nothing listens on port 1: an entry point that got past the secret would fail differently.
  const production = {
    DURABLE_JOBS_MODE: 'production',
    DATABASE_URL: 'postgres://127.0.0.1:1/none',
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    DURABLE_JOBS_NO_PROVIDER: 'true',
    ADMIN_API_KEY: 'an-admin-key-of-sufficient-length',
    DURABLE_JOBS_SECRET_FILE: '',
  };
  for (const [script, program] of [
    ['server/main.ts', 'api'],
    ['workers/main.ts', 'worker'],
  ] as const) {
    it(`${script} in production refuses to start without one, naming the variables`, async () => {
      const r = await run(script, { ...production, DURABLE_JOBS_SECRET: '' });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^${program}: configuration error: DURABLE_JOBS_SECRET is not set: .*DURABLE_JOBS_SECRET_FILE`));
    });
  }

  it('a secret shorter than 32 characters is refused, and the message does not quote it', async () => {
    const r = await run('server/main.ts', { ...production, DURABLE_JOBS_SECRET: 'too-short-a-secret' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DURABLE_JOBS_SECRET: secret 1 of 1 is shorter than 32 characters');
    expect(r.stderr + r.stdout).not.toContain('too-short-a-secret');
  });
});
