import { describe, expect, it } from 'vitest';
import { chooseUpstream } from '../../activities/fallback.js';

const enabled = { enabled: true, reason: 'the fallback upstream is enabled for summarize by alice since 2025-01-01T00:00:00.000Z' };
const off = { enabled: false, reason: null };
const fresh = { inserted: true, was_in_doubt: false, upstream: 'primary' as const };

describe('chooseUpstream: the fallback only by decision, never for an effect in doubt elsewhere', () => {
  it('not enabled: always the primary, nothing to explain', () => {
    expect(chooseUpstream(fresh, off, true)).toEqual({ upstream: 'primary', reason: null });
    expect(chooseUpstream({ inserted: false, was_in_doubt: true, upstream: 'primary' }, off, true)).toEqual({
      upstream: 'primary',
      reason: null,
    });
  });

  it('enabled: a new effect, or one the primary definitely refused (not in doubt), goes to the fallback with the reason', () => {
    expect(chooseUpstream(fresh, enabled, true)).toEqual({
      upstream: 'fallback',
      reason: `sent to the fallback upstream: ${enabled.reason}`,
    });
    expect(chooseUpstream({ inserted: false, was_in_doubt: false, upstream: 'primary' }, enabled, true).upstream).toBe('fallback');
  });

  it('enabled, but in doubt at the primary: reconcile with the primary, and say so', () => {
    const c = chooseUpstream({ inserted: false, was_in_doubt: true, upstream: 'primary' }, enabled, true);
    expect(c.upstream).toBe('primary');
    expect(c.reason).toMatch(/may have reached the primary: reconciling with the primary/);
  });

  it('in doubt at the fallback: reconcile there, even once the operator switched back', () => {
    expect(chooseUpstream({ inserted: false, was_in_doubt: true, upstream: 'fallback' }, off, true).upstream).toBe('fallback');
    expect(chooseUpstream({ inserted: false, was_in_doubt: true, upstream: 'fallback' }, enabled, false).upstream).toBe('fallback');
  });

  it('enabled on a worker without PROVIDER_FALLBACK_URL: stays on the primary and says why', () => {
    const c = chooseUpstream(fresh, enabled, false);
    expect(c).toEqual({ upstream: 'primary', reason: expect.stringMatching(/no PROVIDER_FALLBACK_URL: staying on the primary$/) });
  });
});
