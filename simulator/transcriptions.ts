import type { LogFn } from './http.js';
import type { SimState, Transcription } from './state.js';
import type { TimerSet } from './timers.js';
import { deliverWebhook, type WebhookTarget } from './webhooks.js';

export interface TranscriptionDeps {
  state: SimState;
  /** Background timers: cancelled by reset and close. */
  timers: TimerSet;
  delayMs: number;
  webhook?: WebhookTarget;
  log: LogFn;
}

function complete(transcription: Transcription, deps: TranscriptionDeps): void {
  transcription.status = 'completed';
  transcription.text = `transcript of ${transcription.audioUrl}`;
  if (!deps.webhook) return;
  if (deps.state.faults.takeDroppedWebhook()) {
    deps.log('webhook dropped by fault', { transcriptionId: transcription.id });
    return;
  }
  const data = { id: transcription.id, status: transcription.status, text: transcription.text };
  void deliverWebhook(deps.webhook, { type: 'transcription.completed', data }, deps.timers, deps.log);
}

/** Starts the asynchronous job a real provider would run after answering 202. */
export function startTranscription(id: string, audioUrl: string, deps: TranscriptionDeps): Transcription {
  const transcription: Transcription = { id, audioUrl, status: 'processing' };
  deps.state.transcriptions.set(id, transcription);
  deps.timers.schedule(() => complete(transcription, deps), deps.delayMs);
  return transcription;
}
