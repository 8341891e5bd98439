import { describe, expect, it } from 'vitest';
import { clusterIdOf, errorSignature, normalizeMessage } from '../../services/failure-clusters.js';

describe('error signature normalizer', () => {
  it('masks what varies between occurrences of one failure: IDs, UUIDs, hex, times and numbers', () => {
    expect(normalizeMessage('upstream refused (request req_8f3k2Lq9) with 400 after 3 attempts')).toBe(
      'upstream refused (request <id>) with <n> after <n> attempts',
    );
    expect(normalizeMessage('job job-3f9a1c0e2b7d44aa-replay-2 failed at 2026-12-06T10:15:00.123Z')).toBe('job <id> failed at <time>');
    expect(normalizeMessage('tenant 123e4567-e89b-12d3-a456-426614174000 over quota 1500.5')).toBe('tenant <uuid> over quota <n>');
    expect(normalizeMessage('trace 9f86d081884c7d659a2feaa0c55ad015 lost')).toBe('trace <hex> lost');
    expect(normalizeMessage('  charge   ch_3NqAbc1   declined\n')).toBe('charge <id> declined');
    // What the simulator's refusals say: the endpoint's version stays, the status and request ID go.
    expect(normalizeMessage('upstream answered 400 on /v1/receipts (request req_2e3872763edaf9594fdada6a)')).toBe(
      'upstream answered <n> on /v1/receipts (request <id>)',
    );
  });

  it('keeps words that are not identifiers, so different failures stay apart', () => {
    expect(normalizeMessage('card_declined: insufficient funds')).toBe('card_declined: insufficient funds');
    expect(normalizeMessage('receipt email rejected')).not.toBe(normalizeMessage('receipt email bounced'));
  });

  it('gives one signature for failures that differ only in IDs and numbers, another for another class, status or code', () => {
    const base = {
      errorClass: 'http_400',
      statusCode: 400,
      providerCode: 'invalid_email',
      message: 'rejected (request req_aa11bb) at 12 ms',
    };
    const same = errorSignature({ ...base, message: 'rejected (request req_zz99yy) at 873 ms' });
    expect(errorSignature(base).signature).toBe(same.signature);
    expect(errorSignature(base).signature).toMatch(/^sig-[0-9a-f]{16}$/);
    expect(errorSignature({ ...base, statusCode: 422 }).signature).not.toBe(same.signature);
    expect(errorSignature({ ...base, providerCode: null }).signature).not.toBe(same.signature);
    expect(errorSignature({ ...base, errorClass: 'http_500' }).signature).not.toBe(same.signature);
    expect(errorSignature({ ...base, message: 'accepted' }).signature).not.toBe(same.signature);
  });

  it('names a cluster by signature, job type and tenant', () => {
    const s = errorSignature({ errorClass: 'x', statusCode: null, providerCode: null, message: 'm' }).signature;
    expect(clusterIdOf(s, 'purchase', 'tenant-a')).toMatch(/^cl-[0-9a-f]{20}$/);
    expect(clusterIdOf(s, 'purchase', 'tenant-a')).not.toBe(clusterIdOf(s, 'purchase', 'tenant-b'));
    expect(clusterIdOf(s, 'purchase', 'tenant-a')).not.toBe(clusterIdOf(s, 'summarize', 'tenant-a'));
  });
});
