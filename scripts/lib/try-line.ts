import { DEMO_TENANT, type TenantSeed } from '../../lib/config.js';

/**
 * The "try: curl ..." line `npm start` prints. It shows an API key only when it is the
 * built-in demo tenant's public `demo-key`: a key from `SEED_TENANTS` is a user's real key,
 * and the terminal (and whatever records it) must not get it. Otherwise a placeholder names
 * the tenant whose key to paste.
 */
export function tryCurlLine(api: string, seedTenants: readonly TenantSeed[]): string {
  const first = seedTenants[0];
  const isDemo = first?.tenantId === DEMO_TENANT.tenantId && first.apiKey === DEMO_TENANT.apiKey;
  const key = isDemo ? DEMO_TENANT.apiKey : first ? `<api key of tenant ${first.tenantId}>` : '<api key>';
  return (
    `try: curl -s -X POST ${api}/v1/jobs -H 'Authorization: Bearer ${key}' -H 'Idempotency-Key: order-0001-summary' ` +
    `-H 'Content-Type: application/json' -d '{"type":"summarize","input":{"text":"Temporal keeps the job; Postgres keeps the evidence."}}'`
  );
}
