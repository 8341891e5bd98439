/**
 * The supply-chain step of `.ci/run` (issue 39 §6): `npm audit` of the runtime dependencies
 * (`--omit=dev`) against the lockfile, failing on a high or critical advisory. When the
 * registry cannot answer (offline, or a mirror without the audit endpoint), it says so and
 * passes without claiming a result (scripts/lib/audit-verdict.ts decides).
 *
 *   npx tsx scripts/audit.ts
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { auditVerdict } from './lib/audit-verdict.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** npm retries a dead registry for minutes by default; a CI step should not. */
const TIMEOUT_MS = 120_000;

function runNpmAudit(): Promise<{ stdout: string; stderr: string; failure?: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['audit', '--omit=dev', '--audit-level=high', '--json', '--fetch-timeout=30000', '--fetch-retries=1'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2_000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ stdout: '', stderr: `npm could not run: ${err.message}` });
    });
    child.on('close', (_code, signal) => {
      clearTimeout(timer);
      resolve(signal ? { stdout: '', stderr, failure: `no answer within ${TIMEOUT_MS / 1000} s` } : { stdout, stderr });
    });
  });
}

const verdict = auditVerdict(await runNpmAudit());
for (const line of verdict.lines) console.log(line);
process.exit(verdict.exitCode);
