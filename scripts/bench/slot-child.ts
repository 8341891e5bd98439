// One process acquiring and releasing concurrency slots as fast as it can, through the same
// statements a worker's effects use (store/concurrency.ts): `loops` acquirers at once, each
// with a tenant of its own, all of one job type (so every acquirer of every process shares
// the type's scope and the total scope). Reads its settings from argv[2] (JSON), prints READY
// once its pool is connected and its slot rows exist, starts on a line `GO` on stdin, and
// prints `{"acquired": n, "waited": w, "cpuSec": s}` (its own CPU during the run) when `durationMs` has passed.
// Mode `floor`: the same loop with two one-row commits per round on a row of the acquirer's own
// (`bench_slot_floor`, no row shared with anyone): how far this machine lets commits of 3
// processes scale over 1 at all: the reference for the slots' own scaling here (not an exact
// ceiling: its cheaper statements leave more headroom on busy cores).
import readline from 'node:readline';
import { createPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { ensureSlotRows, releaseSlot, tryAcquireSlot, type SlotRequest } from '../../store/concurrency.js';

export interface SlotChildSettings {
  databaseUrl: string;
  jobType: string;
  tenantPrefix: string;
  loops: number;
  durationMs: number;
  /** Caps far above what the loops can hold at once: the figure is the acquisition's own cost, not waiting. */
  caps: { perTenant: number; global: number; total: number };
  /** `slots` (default): the slot statements; `floor`: two one-row commits on rows no one shares. */
  mode?: 'slots' | 'floor';
}

const s = JSON.parse(process.argv[2]!) as SlotChildSettings;
const pool = createPool(s.databaseUrl, createLogger('bench-slots', 'silent'), s.loops + 1);
const requests: SlotRequest[] = Array.from({ length: s.loops }, (_, i) => ({
  jobType: s.jobType,
  tenantId: `${s.tenantPrefix}-${i}`,
  holder: `${s.tenantPrefix}-${i}`,
  perTenant: s.caps.perTenant,
  global: s.caps.global,
  total: s.caps.total,
  ttlMs: 15_000,
}));
const floor = s.mode === 'floor';
if (floor)
  await pool.query('INSERT INTO bench_slot_floor (id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING', [requests.map((r) => r.holder)]);
else for (const r of requests) await ensureSlotRows(pool, r);
const floorRound = async (id: string) => {
  await pool.query({ name: 'floor-take', text: 'UPDATE bench_slot_floor SET n = n + 1 WHERE id = $1', values: [id] });
  await pool.query({ name: 'floor-free', text: 'UPDATE bench_slot_floor SET n = n - 1 WHERE id = $1', values: [id] });
};
process.stdout.write('READY\n');
const rl = readline.createInterface({ input: process.stdin });
await new Promise<void>((resolve) => rl.on('line', (l) => l.trim() === 'GO' && resolve()));
const cpu0 = process.cpuUsage();
const until = Date.now() + s.durationMs;
let acquired = 0;
let waited = 0;
await Promise.all(
  requests.map(async (r) => {
    while (Date.now() < until) {
      if (floor) {
        await floorRound(r.holder);
        acquired += 1;
        continue;
      }
      const id = await tryAcquireSlot(pool, r);
      if (!id) {
        waited += 1;
        continue;
      }
      acquired += 1;
      await releaseSlot(pool, id);
    }
  }),
);
const cpu = process.cpuUsage(cpu0);
process.stdout.write(`${JSON.stringify({ acquired, waited, cpuSec: (cpu.user + cpu.system) / 1e6 })}\n`);
rl.close();
await pool.end();
