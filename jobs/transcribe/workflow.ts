import { budgetOf, runJob, stepActivities, type JobOutcome, type StepArgs } from '../../job-api/workflow.js';
import { condition, setHandler } from '@temporalio/workflow';
import { transcribe } from './definition.js';
import { transcriptionCompletedSignal, type TranscriptionEvent } from './messages.js';
import type { TranscribeActivities } from './activities.js';

/** How long the job waits for the provider's webhook before it polls. Default 30 s. */
export const DEFAULT_WEBHOOK_WAIT_MS = 30_000;
/** Polling backs off from 1 s to 30 s between reads, for at most 30 minutes in total. */
const POLL_FIRST_MS = 1_000;
const POLL_CAP_MS = 30_000;
const POLL_TOTAL_MS = 30 * 60_000;

export type TranscribeArgs = StepArgs & {
  /** Wait for the webhook before falling back to polling. Default `DEFAULT_WEBHOOK_WAIT_MS`. */
  webhookWaitMs?: number;
};

/**
 * `transcribe`: start the provider's asynchronous work (one effect), then complete on its
 * `transcription.completed` webhook, or, if none comes in time, by polling the provider
 * (the reconciliation path). Either way the result is written once, fenced.
 */
export async function transcribeJob(args: TranscribeArgs): Promise<JobOutcome> {
  // Registered before the first await: a signal that arrived before this run began is
  // buffered by Temporal and delivered here, never dropped.
  const received: TranscriptionEvent[] = [];
  setHandler(transcriptionCompletedSignal, (event) => {
    // Redelivered webhooks are deduplicated upstream; a repeat here changes nothing either.
    if (!received.some((e) => e.webhookId === event.webhookId)) received.push(event);
  });
  const steps = stepActivities<TranscribeActivities>(budgetOf(transcribe, args));

  return runJob(
    args,
    transcribe,
    async (setPhase) => {
      const started = await steps.startTranscription(args);
      const id = started.transcriptionId;
      received.push(...started.early);
      const forThisJob = () => received.find((e) => e.transcriptionId === id);
      const viaWebhook = (event: TranscriptionEvent) =>
        steps.completeTranscription({ ...args, transcriptionId: id, text: event.text, via: 'webhook', webhookId: event.webhookId });

      const waitMs = args.webhookWaitMs ?? DEFAULT_WEBHOOK_WAIT_MS;
      if (!started.noWebhookExpected) {
        setPhase('running', `waiting for the provider's webhook (transcription ${id})`);
        if (await condition(() => forThisJob() !== undefined, waitMs)) return viaWebhook(forThisJob()!);
      }

      setPhase('running', `no webhook in time: polling the provider (transcription ${id})`);
      let delay = POLL_FIRST_MS;
      for (let waited = 0; ; waited += delay, delay = Math.min(delay * 2, POLL_CAP_MS)) {
        const giveUp = waited + delay > POLL_TOTAL_MS;
        const poll = await steps.pollTranscription({ ...args, transcriptionId: id, giveUp });
        if (poll.status === 'completed') {
          return steps.completeTranscription({ ...args, transcriptionId: id, text: poll.text ?? '', via: 'polling', webhookId: null });
        }
        // A webhook that arrives while polling ends the wait early.
        if (await condition(() => forThisJob() !== undefined, delay)) return viaWebhook(forThisJob()!);
      }
    },
    { admitInFirstStep: true },
  );
}
