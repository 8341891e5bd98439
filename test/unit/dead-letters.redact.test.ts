import { describe, expect, it } from 'vitest';
import { deadLetterIdFor, redactMessage } from '../../activities/dead-letters.js';

describe('dead-letter message redaction', () => {
  it('removes input values, e-mail addresses, long numbers and credentials', () => {
    const input = { customer: 'cus_private_42', nested: { note: 'my secret note' }, short: 'ab' };
    const m = redactMessage(
      'bad customer cus_private_42 (my secret note) for jane@example.com card 4111 1111 1111 1111 Bearer abc.def whsec_AAAABBBB',
      input,
    );
    expect(m).toBe('bad customer [input] ([input]) for [email] card [number] Bearer [redacted] whsec_[redacted]');
  });
  it('keeps what explains the failure and caps the length', () => {
    expect(redactMessage('upstream answered 400 on /v1/receipts (request req_abc123)')).toBe(
      'upstream answered 400 on /v1/receipts (request req_abc123)',
    );
    expect(redactMessage('x'.repeat(2_000)).length).toBeLessThanOrEqual(501);
  });
  it('derives one stable ID per failed run', () => {
    expect(deadLetterIdFor('job-a', 'run-1')).toBe(deadLetterIdFor('job-a', 'run-1'));
    expect(deadLetterIdFor('job-a', 'run-1')).not.toBe(deadLetterIdFor('job-a', 'run-2'));
    expect(deadLetterIdFor('job-a', 'run-1')).toMatch(/^dl-[0-9a-f]{24}$/);
  });
});
