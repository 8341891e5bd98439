import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { pausedActivity } from '../../services/timeline-temporal.js';

const S = proto.temporal.api.enums.v1.PendingActivityState;
const ts = (iso: string) => ({ seconds: Math.floor(Date.parse(iso) / 1000), nanos: 0 });

describe("pausedActivity: the paused one among a workflow's pending activities", () => {
  it('reads who paused it (an operator or a rule), why, since when and its attempt', () => {
    const running = { activityType: { name: 'gate' }, state: S.PENDING_ACTIVITY_STATE_STARTED, attempt: 1 };
    const paused = {
      activityType: { name: 'summarize' },
      state: S.PENDING_ACTIVITY_STATE_PAUSED,
      attempt: 3,
      pauseInfo: { pauseTime: ts('2026-12-07T10:00:00Z'), manual: { identity: 'ops-dana', reason: 'hold' } },
    };
    expect(pausedActivity([running, paused])).toEqual({
      activityType: 'summarize',
      since: new Date('2026-12-07T10:00:00Z'),
      by: 'ops-dana',
      reason: 'hold',
      attempt: 3,
    });
    const byRule = {
      activityType: { name: 'charge' },
      state: S.PENDING_ACTIVITY_STATE_PAUSE_REQUESTED,
      pauseInfo: { rule: { ruleId: 'r1', reason: 'brown-out' } },
    };
    expect(pausedActivity([byRule])).toMatchObject({ activityType: 'charge', since: null, by: 'rule r1', reason: 'brown-out', attempt: 1 });
    expect(pausedActivity([running])).toBeNull();
    expect(pausedActivity([])).toBeNull();
  });
});
