import { defineJob } from '../../job-api/workflow.js';
import { z } from 'zod';
import { TRANSCRIPTION_COMPLETED, TRANSCRIPTION_COMPLETED_SIGNAL, TRANSCRIPTION_STEP, toEvent } from './messages.js';

export const transcribe = defineJob({
  name: 'transcribe',
  workflowType: 'transcribeJob',
  description: "start a transcription, then complete on the provider's webhook (or by polling)",
  input: z
    .object({
      audioUrl: z
        .url({ protocol: /^https?$/, error: 'audioUrl must be an http(s) URL' })
        .max(2048, 'audioUrl must be at most 2048 characters'),
    })
    .strict(),
  // One effect: the provider's asynchronous work. Polling is a read and the result a local write.
  effects: [TRANSCRIPTION_STEP],
  // The provider (source `sim`) says when a transcription is done: the event names the
  // transcription, and the job whose `transcribe` effect created it receives the signal.
  webhook: {
    source: 'sim',
    events: [TRANSCRIPTION_COMPLETED],
    route(event) {
      const id = event.data.id;
      if (typeof id !== 'string' || id.length === 0 || id.length > 200)
        return { invalid: 'data.id must be the transcription ID (1-200 characters)' };
      return {
        signal: {
          name: TRANSCRIPTION_COMPLETED_SIGNAL,
          arg: toEvent(event.webhookId, event.data),
          job: { step: TRANSCRIPTION_STEP, providerId: id },
        },
      };
    },
  },
});
