// Bills N orders at once through the service's own code path (`billOrder`, the typed client),
// for durable-jobs' bench (its `example` section runs this from a scratch install of the
// service). Prints the job IDs as one JSON line. Settings come from the environment:
// DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, BENCH_TENANT, BENCH_PREFIX, BENCH_N,
// BENCH_CONCURRENCY.
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { createJobsClient } from 'durable-jobs/client';
import jobs from '../src/jobs.js';
import { billOrder } from '../src/orders.js';

const need = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};

const n = Number(need('BENCH_N'));
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? '16');
const tenantId = need('BENCH_TENANT');
const prefix = need('BENCH_PREFIX');
const pool = new pg.Pool({ connectionString: need('DATABASE_URL'), max: concurrency });
const connection = await Connection.connect({ address: need('TEMPORAL_ADDRESS') });
const client = createJobsClient({
  jobs,
  pool,
  temporal: new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' }),
  taskQueue: process.env.TASK_QUEUE ?? 'durable-jobs',
});
try {
  const ids: string[] = new Array<string>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      for (let i = next++; i < n; i = next++) {
        const r = await billOrder(client, tenantId, { id: `${prefix}-${i}`, amountCents: 100 + i, email: `buyer${i}@acme.test` });
        ids[i] = r.jobId;
      }
    }),
  );
  console.log(JSON.stringify({ ids }));
} finally {
  await client.close();
  await connection.close();
  await pool.end();
}
