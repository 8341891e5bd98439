import {
  NonRetryableError,
  budgetOf,
  claimEarlyWebhooks,
  completeWithOutbox,
  jobType,
  runStep,
  type ActivityDeps,
  type JobInput,
  type StepArgs,
} from '../../job-api/index.js';
import { transcribe } from './definition.js';
import { TRANSCRIPTION_COMPLETED, toEvent, type TranscriptionEvent } from './messages.js';

const TRANSCRIBE_STEP = transcribe.step('transcribe');

export interface TranscriptionStarted {
  transcriptionId: string;
  /** A replay reused the original job's transcription: its webhook came long ago, none will come now. */
  noWebhookExpected: boolean;
  /** Webhooks that arrived before this job had stored the provider ID. */
  early: TranscriptionEvent[];
}

export interface TranscriptionPoll {
  status: string;
  text: string | null;
}

export type TranscriptionArgs = StepArgs & { transcriptionId: string };

/** Activities of the `transcribe` job. Each function name is its Temporal activity type. */
export function createTranscribeActivities(deps: ActivityDeps) {
  return {
    /**
     * The effect `POST /v1/transcriptions` (effect key per job, so a retry never starts a
     * second transcription); its provider ID is stored by `runEffect` before this returns,
     * which is what lets the webhook route find this job. Then it claims any webhook that
     * was faster than that write.
     */
    async startTranscription(args: StepArgs): Promise<TranscriptionStarted> {
      return runStep(deps, args, TRANSCRIBE_STEP, async (ctx) => {
        const input = await ctx.input<JobInput<typeof transcribe>>();
        const e = await ctx.effect(TRANSCRIBE_STEP, '/v1/transcriptions', { audioUrl: input.audioUrl });
        if (!e.providerId) throw new NonRetryableError('provider answered without a transcription ID', { errorClass: 'provider_contract' });
        const transcriptionId = e.providerId;
        const early = await claimEarlyWebhooks(deps, TRANSCRIPTION_COMPLETED, transcriptionId, args.jobId);
        if (early.length > 0)
          deps.log.info(
            { jobId: args.jobId, webhookIds: early.map((d) => d.webhookId) },
            'claimed webhooks that arrived before the job stored its provider ID',
          );
        const replay = (args.effectScope ?? args.jobId) !== args.jobId;
        return {
          transcriptionId,
          noWebhookExpected: replay && e.via === 'reused',
          // What the route chose to signal (rows from before routes: the event's own fields).
          early: early.map((d) => (d.signalArg as TranscriptionEvent | null) ?? toEvent(d.webhookId, d.payload)),
        };
      });
    },

    /**
     * The reconciliation path: one `GET /v1/transcriptions/{id}` (a read, so no effect key).
     * `giveUp` marks the last poll the workflow allows: still unfinished then is a terminal
     * failure, which the lifecycle turns into a dead letter.
     */
    async pollTranscription(args: TranscriptionArgs & { giveUp: boolean }): Promise<TranscriptionPoll> {
      return runStep(deps, args, 'transcribe-poll', async () => {
        const path = `/v1/transcriptions/${encodeURIComponent(args.transcriptionId)}`;
        const res = await deps.provider({
          method: 'GET',
          path,
          tenantId: args.tenantId,
          timeoutMs: budgetOf(transcribe, args).upstreamTimeoutMs,
        });
        const status = String(res.body.status ?? 'unknown');
        if (status === 'failed')
          throw new NonRetryableError(`transcription ${args.transcriptionId} failed at the provider`, {
            errorClass: 'transcription_failed',
          });
        if (status !== 'completed' && args.giveUp) {
          throw new NonRetryableError(`transcription ${args.transcriptionId} still ${status} after the polling budget`, {
            errorClass: 'transcription_timeout',
          });
        }
        return { status, text: typeof res.body.text === 'string' ? res.body.text : null };
      });
    },

    /** The result, fenced, with its outbox (none for this type) in one transaction. */
    async completeTranscription(
      args: TranscriptionArgs & { text: string; via: 'webhook' | 'polling'; webhookId: string | null },
    ): Promise<{ resultStored: boolean }> {
      return runStep(deps, args, 'transcribe-result', async (ctx) => {
        const result = { transcriptionId: args.transcriptionId, text: args.text, completedVia: args.via, webhookId: args.webhookId };
        const resultStored = await completeWithOutbox(deps, ctx, result);
        deps.log.info(
          { jobId: args.jobId, transcriptionId: args.transcriptionId, via: args.via, webhookId: args.webhookId },
          'transcription stored',
        );
        return { resultStored };
      });
    },
  };
}

export type TranscribeActivities = ReturnType<typeof createTranscribeActivities>;

export const transcribeJobType = jobType(transcribe, {
  workflows: new URL('./workflow.ts', import.meta.url),
  activities: createTranscribeActivities,
});
