import { execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenantsAdmin, migrate, NotFoundError } from '../../client/index.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { createPool } from '../../lib/db.js';
import { apiKeyHash } from '../../lib/ids.js';
import { createLogger } from '../../lib/logger.js';
import { buildApp } from '../../server/app.js';
import { upsertTenant } from '../../store/tenants.js';
import { tenantForApiKey } from '../../store/tenant-keys.js';
import { ADMIN_KEY, TENANTS, createTestDatabase, operatorKey, startHarness, uid, type Harness } from '../support/harness.js';

// Tenants and their keys are data: created, listed, given several keys and revoked over the
// admin API, with a revocation that holds at once in every API process (no cache).
let h: Harness;
let other: ReturnType<typeof buildApp>;
let otherUrl = '';
let otherLog = '';
beforeAll(async () => {
  h = await startHarness('tenant-keys', { workers: 0 });
  // A second API process on the same database, logging everything it does.
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      otherLog += chunk.toString();
      done();
    },
  });
  other = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: createLogger('api-2', 'trace', sink),
    adminApiKey: ADMIN_KEY,
    version: 'test',
    webhookSecrets: {},
  });
  await other.listen({ port: 0, host: '127.0.0.1' });
  const addr = other.server.address();
  otherUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(async () => {
  await other?.close();
  await h?.close();
});

const admin = { authorization: `Bearer ${ADMIN_KEY}` };
/** A call to the second API process. */
async function api2(path: string, init: { method?: string; body?: unknown; key?: string } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${init.key ?? ADMIN_KEY}` };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(otherUrl + path, {
    method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}
/** 404 for a job nobody has means the key authenticated; 401 means it did not. */
const statusWith = async (key: string, via: 'first' | 'second') =>
  (via === 'first'
    ? await h.api('/v1/jobs/job-00000000000000000000000000000000', { tenant: null, headers: { authorization: `Bearer ${key}` } })
    : await api2('/v1/jobs/job-00000000000000000000000000000000', { key })
  ).status;
const tenantRow = async (id: string) => (await api2('/v1/admin/tenants')).body.tenants.find((t: { id: string }) => t.id === id);

describe('admin: tenants', () => {
  it('creates a tenant (201), refuses it again (409), and lists it with its keys, never a hash', async () => {
    const id = `acme-${uid()}`;
    const created = await api2('/v1/admin/tenants', { body: { id } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id, liveKeys: 0, keys: [] });
    const again = await api2('/v1/admin/tenants', { body: { id } });
    expect(again.status).toBe(409);
    expect(again.body.type).toBe('urn:durable-jobs:problem:tenant-exists');
    expect(again.body.detail).toContain(id);
    const seeded = await tenantRow(TENANTS.a.id);
    expect(seeded).toMatchObject({ liveKeys: 1, keys: [expect.objectContaining({ name: 'seed', prefix: null, revokedAt: null })] });
    expect(JSON.stringify(seeded)).not.toContain(apiKeyHash(TENANTS.a.key));
  });

  it('answers bad input with a 400 that names the field, and writes nothing', async () => {
    const bad = await api2('/v1/admin/tenants', { body: { id: 'Not Valid!' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ path: 'id', message: expect.stringContaining('a-z, 0-9, _ and -') }]);
    const extra = await api2('/v1/admin/tenants', { body: { id: `ok-${uid()}`, apiKey: 'x' } });
    expect(extra.status).toBe(400);
    expect(extra.body.errors).toEqual([{ path: 'apiKey', message: 'unknown field; allowed: id' }]);
    const missing = await api2('/v1/admin/tenants', { body: {} });
    expect(missing.body.errors).toEqual([{ path: 'id', message: 'required: the tenant ID' }]);
    const badName = await api2(`/v1/admin/tenants/${TENANTS.a.id}/keys`, { body: { name: '' } });
    expect(badName.status).toBe(400);
    expect(badName.body.errors[0].path).toBe('name');
    const badId = await api2('/v1/admin/tenants/NOPE%20X/keys', { body: { name: 'ci' } });
    expect(badId.status).toBe(400);
    expect(badId.body.errors[0].path).toBe('tenantId');
    const ids = (await api2('/v1/admin/tenants')).body.tenants.map((t: { id: string }) => t.id);
    expect(ids.filter((x: string) => x.startsWith('ok-') || x === 'Not Valid!')).toEqual([]);
    expect((await tenantRow(TENANTS.a.id)).keys).toHaveLength(1);
  });

  it('is admin-only: a tenant key or no key gets 401, and nothing is created', async () => {
    const id = `sneaky-${uid()}`;
    const asTenant = await h.api('/v1/admin/tenants', { body: { id } });
    expect(asTenant.status).toBe(401);
    const asTenantKey = await h.api(`/v1/admin/tenants/${TENANTS.a.id}/keys`, { body: { name: 'mine' } });
    expect(asTenantKey.status).toBe(401);
    expect((await h.api('/v1/admin/tenants', { tenant: null })).status).toBe(401);
    expect((await h.api(`/v1/admin/tenants/${TENANTS.a.id}/keys/seed`, { method: 'DELETE' })).status).toBe(401);
    expect(await tenantRow(id)).toBeUndefined();
    expect(await statusWith(TENANTS.a.key, 'first')).toBe(404); // the seed key still works
  });

  it('names an unknown tenant in a 404', async () => {
    const id = `ghost-${uid()}`;
    const add = await api2(`/v1/admin/tenants/${id}/keys`, { body: { name: 'ci' } });
    expect(add.status).toBe(404);
    expect(add.body.detail).toContain(`tenant "${id}" not found`);
    const revoke = await api2(`/v1/admin/tenants/${id}/keys/ci`, { method: 'DELETE' });
    expect(revoke.status).toBe(404);
    expect(revoke.body.detail).toContain(`tenant "${id}" not found`);
    expect(await tenantRow(id)).toBeUndefined();
  });
});

describe('admin: tenant keys', () => {
  it('gives a tenant two live keys, revokes one: 401 at once on another API process, the other key still works', async () => {
    const id = `rotate-${uid()}`;
    expect((await api2('/v1/admin/tenants', { body: { id } })).status).toBe(201);
    const ci = await api2(`/v1/admin/tenants/${id}/keys`, { body: { name: 'ci' } });
    expect(ci.status).toBe(201);
    expect(ci.headers.get('cache-control')).toBe('no-store');
    expect(ci.body.key).toMatch(/^dj_live_[A-Za-z0-9_-]{32}$/);
    expect(ci.body.prefix).toBe(ci.body.key.slice(0, 16));
    const laptop = await api2(`/v1/admin/tenants/${id}/keys`, { body: { name: 'laptop' } });
    expect(laptop.body.key).not.toBe(ci.body.key);
    expect((await api2(`/v1/admin/tenants/${id}/keys`, { body: { name: 'ci' } })).status).toBe(409); // a live "ci" exists

    // Both keys open both processes, as this tenant.
    for (const key of [ci.body.key, laptop.body.key]) {
      expect(await statusWith(key, 'first')).toBe(404);
      expect(await statusWith(key, 'second')).toBe(404);
    }
    const submitted = await h.api('/v1/jobs', {
      tenant: null,
      headers: { authorization: `Bearer ${laptop.body.key}`, 'idempotency-key': `k-${uid()}-keys` },
      body: { type: 'summarize', input: { text: 'Submitted with a second key.' } },
    });
    expect(submitted.status).toBe(202);
    const row = await h.pool.query('SELECT tenant_id FROM job_intents WHERE job_id = $1', [submitted.body.jobId]);
    expect(row.rows[0].tenant_id).toBe(id);

    // Revoked through the first process; the second, which just let the key in, refuses it now.
    const revoked = await h.api(`/v1/admin/tenants/${id}/keys/ci`, { method: 'DELETE', tenant: null, headers: admin });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ tenantId: id, name: 'ci', revokedBy: 'admin', revokedAt: expect.any(String) });
    expect(await statusWith(ci.body.key, 'second')).toBe(401);
    expect(await statusWith(ci.body.key, 'first')).toBe(401);
    expect(await statusWith(laptop.body.key, 'second')).toBe(404);
    // Revoked by another process (no code of this one runs: nothing here could drop a cache).
    await h.pool.query(`UPDATE tenant_keys SET revoked_at = now(), revoked_by = 'elsewhere' WHERE tenant_id = $1 AND name = 'laptop'`, [
      id,
    ]);
    expect(await statusWith(laptop.body.key, 'second')).toBe(401);
    expect(await statusWith(laptop.body.key, 'first')).toBe(401);
    expect((await api2(`/v1/admin/tenants/${id}/keys/ci`, { method: 'DELETE' })).body.detail).toBe(
      `tenant "${id}" has no live key named "ci"`,
    );

    // The name is free again for the replacement; the revoked key stays listed, revoked.
    const ci2 = await api2(`/v1/admin/tenants/${id}/keys`, { body: { name: 'ci' } });
    expect(ci2.status).toBe(201);
    expect(await statusWith(ci2.body.key, 'second')).toBe(404);
    const t = await tenantRow(id);
    expect(t.liveKeys).toBe(1);
    expect(t.keys.map((k: { name: string; revokedAt: string | null }) => [k.name, k.revokedAt !== null])).toEqual([
      ['ci', true],
      ['laptop', true],
      ['ci', false],
    ]);
  });

  it('records when a key was last used, writing at most about once a minute per key', async () => {
    const id = `used-${uid()}`;
    await api2('/v1/admin/tenants', { body: { id } });
    const used = (await api2(`/v1/admin/tenants/${id}/keys`, { body: { name: 'used' } })).body;
    await api2(`/v1/admin/tenants/${id}/keys`, { body: { name: 'idle' } });
    expect((await tenantRow(id)).keys.map((k: { lastUsedAt: string | null }) => k.lastUsedAt)).toEqual([null, null]);
    expect(await statusWith(used.key, 'first')).toBe(404);
    const [first, idle] = (await tenantRow(id)).keys;
    expect(Date.parse(first.lastUsedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(idle.lastUsedAt).toBeNull();
    // Used again within the minute: no new write.
    expect(await statusWith(used.key, 'second')).toBe(404);
    expect((await tenantRow(id)).keys[0].lastUsedAt).toBe(first.lastUsedAt);
    // An hour-old mark is touched on the next use.
    await h.pool.query(`UPDATE tenant_keys SET last_used_at = now() - interval '1 hour' WHERE tenant_id = $1 AND name = 'used'`, [id]);
    expect(await statusWith(used.key, 'second')).toBe(404);
    expect(Date.parse((await tenantRow(id)).keys[0].lastUsedAt)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('never logs a raw key, and never stores one', async () => {
    const id = `secret-${uid()}`;
    await api2('/v1/admin/tenants', { body: { id } });
    const added = (await api2(`/v1/admin/tenants/${id}/keys`, { body: { name: 'ci' } })).body;
    expect(await statusWith(added.key, 'second')).toBe(404);
    await api2(`/v1/admin/tenants/${id}/keys/ci`, { method: 'DELETE' });
    expect(await statusWith(added.key, 'second')).toBe(401);
    expect(otherLog).toContain('tenant key added');
    expect(otherLog).toContain(added.prefix);
    expect(otherLog).not.toContain(added.key);
    expect(otherLog).not.toContain(added.key.slice(16));
    const stored = await h.pool.query(`SELECT row_to_json(k)::text AS row FROM tenant_keys k WHERE tenant_id = $1`, [id]);
    expect(stored.rows[0].row).not.toContain(added.key.slice(16));
  });
});

describe('seeding (SEED_TENANTS)', () => {
  it('gives the tenant a key named seed; a changed seed key replaces it; a key of another tenant is refused', async () => {
    const id = `seeded-${uid()}`;
    await upsertTenant(h.pool, id, `seed-key-one-${id}`);
    await upsertTenant(h.pool, id, `seed-key-one-${id}`); // every start seeds again: a no-op
    expect(await tenantForApiKey(h.pool, `seed-key-one-${id}`)).toBe(id);
    await upsertTenant(h.pool, id, `seed-key-two-${id}`);
    expect(await tenantForApiKey(h.pool, `seed-key-one-${id}`)).toBeUndefined();
    expect(await tenantForApiKey(h.pool, `seed-key-two-${id}`)).toBe(id);
    expect((await tenantRow(id)).liveKeys).toBe(1);
    await expect(upsertTenant(h.pool, `thief-${uid()}`, `seed-key-two-${id}`)).rejects.toThrow(/already a key of tenant/);
  });
});

describe('backend code (durable-jobs/client)', () => {
  it('manages tenants and keys with createTenantsAdmin', async () => {
    const tenants = createTenantsAdmin(h.pool);
    const id = `lib-${uid()}`;
    expect((await tenants.createTenant(id)).id).toBe(id);
    const added = await tenants.addKey(id, { name: 'backend' });
    expect(await tenantForApiKey(h.pool, added.key)).toBe(id);
    expect((await tenants.listTenants()).find((t) => t.id === id)?.keys[0]).toMatchObject({ name: 'backend', createdBy: 'client' });
    await tenants.revokeKey(id, 'backend');
    expect(await tenantForApiKey(h.pool, added.key)).toBeUndefined();
    await expect(tenants.addKey(`nobody-${uid()}`, { name: 'x' })).rejects.toThrow(NotFoundError);
  });

  it('answers submitJob for an unknown tenant with a NotFoundError naming it, and keeps nothing', async () => {
    const tenantId = `unknown-${uid()}`;
    const err = await h.jobs
      .submitJob({ tenantId, type: 'summarize', idempotencyKey: `k-${uid()}-unknown`, input: { text: 'No such tenant.' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as Error).message).toContain(`tenant "${tenantId}" not found`);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM job_intents WHERE tenant_id = $1', [tenantId])).rows[0].n).toBe(0);
  });
});

describe('upgrading a database from before tenant keys (0019)', () => {
  it("keeps every tenant's key working, now named default", async () => {
    const pool = createPool(await createTestDatabase('tenant_keys_upgrade'), h.log, 2);
    try {
      await migrate(pool, { through: '0019' });
      await pool.query('INSERT INTO tenants (id, api_key_hash) VALUES ($1, $2)', ['old-tenant', apiKeyHash('old-tenant-key')]);
      expect(await migrate(pool, { through: '0020' })).toEqual(['0020_tenant_keys.sql']);
      await migrate(pool); // the later migrations too: the code below is today's
      expect(await tenantForApiKey(pool, 'old-tenant-key')).toBe('old-tenant');
      const [t] = await createTenantsAdmin(pool).listTenants();
      expect(t).toMatchObject({
        id: 'old-tenant',
        liveKeys: 1,
        keys: [{ name: 'default', prefix: null, createdBy: 'migration', revokedAt: null }],
      });
      // Revoked, it is gone from the column the previous release still reads during a rolling deploy.
      await createTenantsAdmin(pool).revokeKey('old-tenant', 'default');
      expect(await tenantForApiKey(pool, 'old-tenant-key')).toBeUndefined();
      expect((await pool.query('SELECT api_key_hash FROM tenants')).rows[0].api_key_hash).toBeNull();
    } finally {
      await pool.end();
    }
  });
});

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The real CLI (`npm run tenants` runs exactly this), against this file's API, as operator erin. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/tenants.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DJ_API_URL: h.baseUrl, ADMIN_API_KEY: operatorKey('erin') },
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('npm run tenants', () => {
  it('creates, lists, adds a key (printed once) and revokes it; bad input exits 2 with the usage', async () => {
    const id = `cli-${uid()}`;
    const created = await cli('create', id);
    expect(created.code).toBe(0);
    expect(created.stdout).toContain(`tenant ${id} created`);
    expect((await cli('create', id)).stderr).toContain(`409 Tenant already exists: tenant "${id}" already exists`);

    const added = await cli('add-key', id, '--name', 'ci');
    expect(added.code).toBe(0);
    const key = added.stdout.trim();
    expect(key).toMatch(/^dj_live_[A-Za-z0-9_-]{32}$/);
    expect(added.stderr).toContain('shown this once');
    expect(await statusWith(key, 'first')).toBe(404);

    const list = await cli('list');
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+ci\\s+${key.slice(0, 16)}\\s+live`));
    expect(list.stdout).not.toContain(key);
    const json = JSON.parse((await cli('list', '--json')).stdout);
    expect(json.tenants.find((t: { id: string }) => t.id === id).keys[0]).toMatchObject({ name: 'ci', createdBy: 'erin' });
    expect(JSON.stringify(json)).not.toContain(key);

    const revoked = await cli('revoke-key', id, 'ci');
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`key "ci" of tenant ${id} revoked`);
    expect(await statusWith(key, 'first')).toBe(401);

    const noName = await cli('add-key', id);
    expect(noName.code).toBe(2);
    expect(noName.stderr).toContain('add-key needs --name NAME');
    expect((await cli('revoke-key', id)).stderr).toContain('missing key name');
    const unknown = await cli('add-key', `ghost-${uid()}`, '--name', 'ci');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/404 Not found: tenant "ghost-[0-9a-f]+" not found/);
  });
});
