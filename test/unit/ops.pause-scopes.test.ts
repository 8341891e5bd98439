import { describe, expect, it } from 'vitest';
import { scopeReason } from '../../activities/admission.js';
import { retryAfterSeconds } from '../../services/rate-limit.js';
import { holdingScope, sameScope, scopeMatches, type PauseScope } from '../../store/degradation.js';

// Pauses by type, tenant or pair (issue 38 §4) and the intake limit's Retry-After (§5): pure logic.
const at = (p: Omit<PauseScope, 'since' | 'by'>): PauseScope => ({ ...p, since: '2026-12-07T02:00:00.000Z', by: 'alice' });
const job = { tenantId: 'acme', jobType: 'summarize' };

describe('pause scopes', () => {
  it('match by type, tenant or both; a missing key matches any', () => {
    expect(scopeMatches({ jobType: 'summarize' }, job)).toBe(true);
    expect(scopeMatches({ tenantId: 'acme' }, job)).toBe(true);
    expect(scopeMatches({ tenantId: 'acme', jobType: 'summarize' }, job)).toBe(true);
    expect(scopeMatches({ tenantId: 'acme', jobType: 'purchase' }, job)).toBe(false);
    expect(scopeMatches({ tenantId: 'other' }, job)).toBe(false);
    expect(sameScope({ tenantId: 'acme' }, { tenantId: 'acme', jobType: undefined })).toBe(true);
    expect(sameScope({ tenantId: 'acme' }, { jobType: 'acme' })).toBe(false);
  });

  it('name the most specific pause that holds the job, and never the operator to the tenant', () => {
    const scopes = [at({ tenantId: 'acme' }), at({ jobType: 'summarize' }), at({ tenantId: 'acme', jobType: 'summarize' })];
    expect(holdingScope(scopes, job)).toEqual(scopes[2]);
    expect(holdingScope(scopes.slice(0, 2), job)).toEqual(scopes[1]);
    expect(holdingScope([at({ tenantId: 'other' })], job)).toBeUndefined();
    const reason = scopeReason(scopes[2]!, 60);
    expect(reason).toBe(
      "this tenant's summarize jobs are paused by an operator since 2026-12-07T02:00:00.000Z; they resume at 60/min once the pause is lifted",
    );
    expect(reason).not.toContain('alice');
    expect(scopeReason(scopes[0]!, 60)).toMatch(/^this tenant's jobs are paused/);
    expect(scopeReason(scopes[1]!, 60)).toMatch(/^summarize jobs are paused/);
  });
});

describe("the intake limit's Retry-After", () => {
  it('is the whole seconds until a token is back, at least 1', () => {
    expect(retryAfterSeconds(0, 1)).toBe(1);
    expect(retryAfterSeconds(0, 0.1)).toBe(10);
    expect(retryAfterSeconds(0.5, 0.1)).toBe(5);
    expect(retryAfterSeconds(0.99, 100)).toBe(1);
    expect(retryAfterSeconds(-3, 0.5)).toBe(2);
    expect(retryAfterSeconds(0, 0)).toBe(1);
  });
});
