import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * `npm run drill` end to end: it starts its own stack (Postgres, a persistent Temporal dev
 * server, the simulator, the API, two worker processes), runs every checklist item with real
 * faults and kills, and must report every row PASS.
 */
describe('npm run drill', () => {
  it('runs every checklist item against a stack it starts itself, all PASS', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'dj-drill-'));
    const json = path.join(dir, 'drill.json');
    try {
      // The drill must start its own stack, not reuse the suite's.
      const env = { ...process.env };
      delete env.DATABASE_URL;
      delete env.TEMPORAL_ADDRESS;
      delete env.PROVIDER_URL;
      const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/drill.ts', '--json', json], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
      child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      const report = JSON.parse(await readFile(json, 'utf8')) as { rows: Array<{ item: string; verdict: string; observed: string }> };
      const failed = report.rows.filter((r) => r.verdict !== 'PASS');
      expect(failed, out.slice(-4000)).toEqual([]);
      expect(report.rows.map((r) => r.item.split(' ')[0])).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
      expect(code).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 900_000);
});
