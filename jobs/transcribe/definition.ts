import { TRANSCRIPTION_STEP, defineJob } from '../../job-api/workflow.js';
import { z } from 'zod';

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
});
