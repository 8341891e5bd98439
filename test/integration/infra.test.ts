// The local stack that test/support/global-setup.ts provides, and embedded Postgres restarts.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { SEARCH_ATTRIBUTES } from '../../scripts/lib/dev-server.ts';
import { startEmbeddedPostgres } from '../../scripts/lib/embedded-pg.ts';

describe('local infrastructure', () => {
  it('Postgres accepts queries', async () => {
    const client = new pg.Client({ connectionString: inject('databaseUrl') });
    await client.connect();
    try {
      const { rows } = await client.query<{ one: number; version: string }>('SELECT 1 AS one, version() AS version');
      expect(rows[0]?.one).toBe(1);
      expect(rows[0]?.version).toMatch(/PostgreSQL/);
    } finally {
      await client.end();
    }
  });

  it('Temporal answers and has the custom search attributes', async () => {
    const namespace = inject('temporalNamespace');
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const ns = await connection.workflowService.describeNamespace({ namespace });
      expect(ns.namespaceInfo?.name).toBe(namespace);
      const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
      for (const name of Object.keys(SEARCH_ATTRIBUTES)) {
        // 2 = INDEXED_VALUE_TYPE_KEYWORD
        expect(customAttributes?.[name], name).toBe(2);
      }
    } finally {
      await connection.close();
    }
  });

  it('an embedded Postgres survives restart(), and a pool reconnects', async () => {
    const parent = await fs.mkdtemp(path.join(os.tmpdir(), 'durable-jobs-infra-test-'));
    await fs.chmod(parent, 0o755); // the `postgres` user (when we are root) must traverse it
    const dataDir = path.join(parent, 'data');
    const logs: string[] = [];
    const db = await startEmbeddedPostgres({ dataDir, port: 0, persistent: false, log: (m) => logs.push(m) });
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    const poolErrors: unknown[] = [];
    pool.on('error', (err) => poolErrors.push(err)); // idle clients die on restart (57P01)
    try {
      expect(db.url).toBe(`postgres://postgres:postgres@127.0.0.1:${db.port}/postgres`);
      await pool.query('CREATE TABLE t (v int)');
      await pool.query('INSERT INTO t VALUES (42)');

      await db.restart();

      const { rows } = await pool.query<{ v: number }>('SELECT v FROM t');
      expect(rows).toEqual([{ v: 42 }]);
    } finally {
      await pool.end();
      await db.stop();
      await fs.rm(parent, { recursive: true, force: true });
    }
    await expect(fs.stat(dataDir)).rejects.toThrow(/ENOENT/);
  });
});
