import { describe, expect, it } from 'vitest';
import { DEMO_TENANT, loadConfig } from '../../lib/config.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { tryCurlLine } from '../../scripts/lib/try-line.js';

const seeds = (env: Record<string, string>) => loadConfig(env, { jobTypes: defaultJobRegistry.names, mode: 'dev' }).seedTenants;

describe("npm start's try: curl line", () => {
  it('never prints a key from SEED_TENANTS: a placeholder names the tenant', () => {
    const line = tryCurlLine('http://127.0.0.1:8080', seeds({ SEED_TENANTS: 'acme=acme-live-secret-key-0123456789abcdef,demo=demo-key' }));
    expect(line).not.toContain('acme-live-secret-key-0123456789abcdef');
    expect(line).toContain("Authorization: Bearer <api key of tenant acme>'");
    expect(line).toMatch(/^try: curl -s -X POST http:\/\/127\.0\.0\.1:8080\/v1\/jobs /);
  });

  it('prints the built-in demo key only for the built-in demo tenant', () => {
    expect(seeds({})).toEqual([DEMO_TENANT]);
    expect(tryCurlLine('http://x', seeds({}))).toContain("Authorization: Bearer demo-key'");
    // A user's own key for a tenant named demo is still theirs.
    const own = tryCurlLine('http://x', seeds({ SEED_TENANTS: 'demo=my-private-demo-key-0123456789abcdef' }));
    expect(own).not.toContain('my-private-demo-key-0123456789abcdef');
    expect(own).toContain('<api key of tenant demo>');
    expect(tryCurlLine('http://x', [])).toContain('Bearer <api key>');
  });
});
