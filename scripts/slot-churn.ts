// One process taking and releasing concurrency slots as fast as it can, for a fixed time:
// test/integration/effects.concurrency-processes.test.ts and scripts/slot-throughput.ts run several of these at once.
// argv: a JSON SlotChurn. Prints one JSON line: { acquired, refused }.
// With `audit`, each hold is recorded (start after the acquisition committed, end before the
// release), so overlaps counted from the audit never exceed the real ones.
import pg from 'pg';
import { releaseSlot, tryAcquireSlot } from '../store/concurrency.js';

export interface SlotChurn {
  databaseUrl: string;
  jobTypes: string[];
  tenants: string[];
  perTenant: number;
  global: number;
  total?: number;
  durationMs: number;
  holdMs: number;
  audit: boolean;
  /** Acquirers in this process (each its own connection). Default 4. */
  lanes?: number;
}

const c = JSON.parse(process.argv[2]!) as SlotChurn;
const pool = new pg.Pool({ connectionString: c.databaseUrl, max: (c.lanes ?? 4) + 1 });
const deadline = Date.now() + c.durationMs;
let acquired = 0;
let refused = 0;
const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

async function lane(n: number): Promise<void> {
  for (let i = 0; Date.now() < deadline; i++) {
    const jobType = pick(c.jobTypes);
    const tenantId = pick(c.tenants);
    const req = {
      jobType,
      tenantId,
      holder: `p${process.pid}-${n}-${i}`,
      perTenant: c.perTenant,
      global: c.global,
      total: c.total,
      ttlMs: 60_000,
    };
    const id = await tryAcquireSlot(pool, req);
    if (!id) {
      refused++;
      await new Promise((r) => setTimeout(r, 1));
      continue;
    }
    acquired++;
    let auditId: string | undefined;
    if (c.audit)
      auditId = (
        await pool.query<{ id: string }>('INSERT INTO slot_audit (job_type, tenant_id) VALUES ($1, $2) RETURNING id', [jobType, tenantId])
      ).rows[0]!.id;
    if (c.holdMs > 0) await new Promise((r) => setTimeout(r, c.holdMs));
    if (auditId) await pool.query('UPDATE slot_audit SET ended = clock_timestamp() WHERE id = $1', [auditId]);
    await releaseSlot(pool, id);
  }
}

await Promise.all(Array.from({ length: c.lanes ?? 4 }, (_, n) => lane(n)));
await pool.end();
process.stdout.write(`${JSON.stringify({ acquired, refused })}\n`);
