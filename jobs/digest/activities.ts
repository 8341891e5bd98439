import {
  completeWithOutbox,
  finishedJobCounts,
  intentCreatedAt,
  jobType,
  runStep,
  type ActivityDeps,
  type StepArgs,
} from '../../job-api/index.js';
import { digest, type DigestInput } from './definition.js';

/** The `digest` activity. Its function name is its Temporal activity type. */
export function createDigestActivities(deps: ActivityDeps) {
  return {
    /** `digest`: one notification per tenant and window, sent as an effect (its key is the job's). */
    async sendDigest(args: StepArgs): Promise<{ resultStored: boolean }> {
      return runStep(deps, args, 'digest', async (ctx) => {
        const input = await ctx.input<DigestInput>();
        const createdAt = await intentCreatedAt(deps, args.jobId);
        // Count only what finished before this intent existed: every attempt sends the same body.
        const cutoff = new Date(Math.min(Date.parse(input.periodEnd), createdAt!.getTime()));
        // Digests themselves are not what a digest reports on.
        const counts = await finishedJobCounts(deps, args.tenantId, input.periodStart, cutoff, { exceptTypes: [digest.name] });
        const lines = Object.entries(counts).map(([status, n]) => `${status}: ${n}`);
        const e = await ctx.effect(
          digest.step('digest'),
          '/v1/notifications',
          {
            to: `tenant:${args.tenantId}`,
            subject: `Jobs digest ${input.periodStart} to ${input.periodEnd}`,
            body: lines.length > 0 ? lines.join('\n') : 'no jobs finished in this period',
          },
          { storeWithResult: true },
        );
        const result = { periodStart: input.periodStart, periodEnd: input.periodEnd, counts, notificationId: e.providerId };
        return { resultStored: await completeWithOutbox(deps, ctx, result) };
      });
    },
  };
}

export type DigestActivities = ReturnType<typeof createDigestActivities>;

export const digestJobType = jobType(digest, {
  workflows: new URL('./workflow.ts', import.meta.url),
  activities: createDigestActivities,
});
