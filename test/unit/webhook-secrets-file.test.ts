import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { defaultJobRegistry } from '../../jobs/index.js';

const dir = mkdtempSync(path.join(tmpdir(), 'dj-secrets-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const a = 'whsec_aaaaaaaaaaaaaaaaaaaa';
const b = 'whsec_bbbbbbbbbbbbbbbbbbbb';
const load = (env: Record<string, string>) => loadConfig(env, { jobTypes: defaultJobRegistry.names, mode: 'dev' });

describe('WEBHOOK_SECRETS_FILE', () => {
  it('reads one entry per line (comments, blank lines ignored); per source over WEBHOOK_SECRETS', () => {
    const file = path.join(dir, 'ok');
    writeFileSync(file, `# rotating acme\nacme=${b}|${a}\n\nother=${a}  # old provider\n`);
    const c = load({ WEBHOOK_SECRETS: `acme=${a},sim=${a}`, WEBHOOK_SECRETS_FILE: file });
    expect(c.webhookSecrets).toEqual({ acme: [b, a], other: [a], sim: [a] });
    expect(c.webhookSecretsSource).toEqual({ env: `acme=${a},sim=${a}`, file });
  });

  it('refuses a malformed or missing file naming the variable, never echoing a secret', () => {
    const file = path.join(dir, 'bad');
    writeFileSync(file, `acme=${a}|oops-not-a-secret\n`);
    expect(() => load({ WEBHOOK_SECRETS_FILE: file })).toThrow(/WEBHOOK_SECRETS_FILE/);
    try {
      load({ WEBHOOK_SECRETS_FILE: file });
    } catch (err) {
      expect((err as Error).message).not.toContain(a);
    }
    expect(() => load({ WEBHOOK_SECRETS_FILE: path.join(dir, 'absent') })).toThrow(/WEBHOOK_SECRETS_FILE: cannot read .*ENOENT/);
  });
});
