import { newId, type JsonObject } from './http.js';
import { startTranscription, type TranscriptionDeps } from './transcriptions.js';

/** A POST endpoint's validation and effect; idempotency is handled around it. */
export interface Operation {
  /** HTTP status of a successful answer. */
  status: number;
  /** Returns the error code for an invalid body, or undefined when valid. */
  validate(body: JsonObject): { error: string; message: string } | undefined;
  /** Applies the effect once and returns the response body (without requestId). */
  apply(body: JsonObject): JsonObject;
}

const SUMMARY_MAX_CHARS = 200;

function nonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.trim().length > 0;
}

/** Deterministic so tests and replays can predict it: first sentence, at most 200 chars. */
export function summarize(text: string): string {
  const trimmed = text.trim();
  const sentenceEnd = /[.!?](\s|$)/.exec(trimmed);
  const sentence = sentenceEnd ? trimmed.slice(0, sentenceEnd.index + 1) : trimmed;
  return sentence.slice(0, SUMMARY_MAX_CHARS);
}

const summaries: Operation = {
  status: 200,
  validate: (body) => (nonEmptyString(body.text) ? undefined : { error: 'invalid_text', message: 'text must be a non-empty string' }),
  apply: (body) => ({ id: newId('sum'), summary: summarize(String(body.text)) }),
};

const notifications: Operation = {
  status: 200,
  validate: (body) => {
    if (!nonEmptyString(body.to)) return { error: 'invalid_to', message: 'to must be a non-empty string' };
    for (const field of ['subject', 'body'] as const) {
      if (body[field] !== undefined && typeof body[field] !== 'string') {
        return { error: `invalid_${field}`, message: `${field} must be a string when given` };
      }
    }
    return undefined;
  },
  apply: () => ({ id: newId('ntf') }),
};

const charges: Operation = {
  status: 200,
  validate: (body) => {
    const amount = body.amountCents;
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0) {
      return { error: 'invalid_amount', message: 'amountCents must be a positive integer' };
    }
    if (typeof body.currency !== 'string' || !/^[A-Za-z]{3}$/.test(body.currency)) {
      return { error: 'invalid_currency', message: 'currency must be a 3-letter code' };
    }
    if (!nonEmptyString(body.customer)) return { error: 'invalid_customer', message: 'customer must be a non-empty string' };
    return undefined;
  },
  apply: (body) => ({ id: newId('ch'), status: 'succeeded', amountCents: body.amountCents, currency: body.currency }),
};

const receipts: Operation = {
  status: 200,
  validate: (body) => {
    if (!nonEmptyString(body.chargeId)) return { error: 'invalid_charge_id', message: 'chargeId must be a non-empty string' };
    if (!nonEmptyString(body.email)) return { error: 'invalid_email', message: 'email must be a non-empty string' };
    return undefined;
  },
  apply: () => ({ id: newId('rcpt') }),
};

function transcriptions(deps: TranscriptionDeps): Operation {
  return {
    status: 202,
    validate: (body) =>
      nonEmptyString(body.audioUrl) ? undefined : { error: 'invalid_audio_url', message: 'audioUrl must be a non-empty string' },
    apply: (body) => {
      const transcription = startTranscription(newId('tr'), String(body.audioUrl), deps);
      return { id: transcription.id, status: transcription.status };
    },
  };
}

/**
 * A path the simulator does not model (`POST /v1/invoices`), when the simulator is started
 * with `generic: true`: any JSON object body is accepted and the effect applied once per
 * Idempotency-Key, answered with a new object ID (prefix from the path) and the body echoed.
 */
export function genericOperation(path: string): Operation {
  const prefix = path.slice('/v1/'.length).replace(/-/g, '_').slice(0, 12);
  return { status: 200, validate: () => undefined, apply: (body) => ({ ...body, id: newId(prefix) }) };
}

/** POST endpoints by path. */
export function createOperations(deps: TranscriptionDeps): Map<string, Operation> {
  return new Map([
    ['/v1/summaries', summaries],
    ['/v1/notifications', notifications],
    ['/v1/charges', charges],
    ['/v1/receipts', receipts],
    ['/v1/transcriptions', transcriptions(deps)],
  ]);
}
