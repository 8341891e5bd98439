import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A bad setting stops an entry point with one line that names it (exit code 2), before it
// starts anything: no stack trace, and nothing of the value beyond what the message quotes.
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

describe('entry points refuse a bad configuration in one line', () => {
  for (const [script, program] of [
    ['scripts/start.ts', 'start'],
    ['workers/main.ts', 'worker'],
    ['server/main.ts', 'api'],
  ] as const) {
    it(`${script}: FAST_PATH_JOB_TYPES naming no job type`, async () => {
      const r = await run(script, { FAST_PATH_JOB_TYPES: 'summarize,not-a-type', DATABASE_URL: 'postgres://127.0.0.1:1/none' });
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `${program}: configuration error: FAST_PATH_JOB_TYPES: "not-a-type" is not a job type (job types: summarize, purchase, transcribe, digest)\n`,
      );
      expect(r.stdout).toBe('');
    });
  }
});
