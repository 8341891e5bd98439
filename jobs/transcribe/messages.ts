/**
 * The `transcribe` type's messages: the provider's `transcription.completed` event, and the
 * signal its webhook route sends the job. Workflow-safe. The names are wire contract: the
 * signal's name is in every recorded history and in every delivery row waiting for its job.
 */
import { defineSignal } from '@temporalio/workflow';

/** A provider's `transcription.completed` webhook, as the job receives it. */
export interface TranscriptionEvent {
  webhookId: string;
  transcriptionId: string;
  status: string;
  text: string;
}
export const TRANSCRIPTION_COMPLETED_SIGNAL = 'transcriptionCompleted';
export const transcriptionCompletedSignal = defineSignal<[TranscriptionEvent]>(TRANSCRIPTION_COMPLETED_SIGNAL);

/** The event type the provider sends when a transcription is done. */
export const TRANSCRIPTION_COMPLETED = 'transcription.completed';
/** The effect step that stores the provider's transcription ID: the webhook's subject. */
export const TRANSCRIPTION_STEP = 'transcribe';

/** Events carry their data as the provider sent it; the job only needs these fields. */
export function toEvent(webhookId: string, payload: Record<string, unknown>): TranscriptionEvent {
  return {
    webhookId,
    transcriptionId: String(payload.id),
    status: String(payload.status ?? 'completed'),
    text: typeof payload.text === 'string' ? payload.text : '',
  };
}
