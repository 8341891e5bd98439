import type { IntentRow } from '../store/intents.js';
import type { JobState } from '../workflows/job-types.js';

/** What a user sees of a job. Timestamps are ISO 8601 UTC. */
export interface JobStatus {
  jobId: string;
  type: string;
  status: JobState;
  priority: string;
  attempts: number;
  createdAt: string;
  updatedAt: string;
  result?: unknown;
  error?: { errorClass: string; message: string; statusCode?: number };
  statusReason?: string;
  nextAttemptAt?: string;
  notification?: string;
  replayOf?: string;
  /** Time spent waiting in the queue before the first attempt started executing. */
  queuedMs?: number;
  deadLetterId?: string;
  nextPollSeconds?: number;
}

const FINAL: JobState[] = ['succeeded', 'dead_lettered', 'cancelled'];

export function toJobStatus(row: IntentRow & { dead_letter_id?: string | null }): JobStatus {
  const s: JobStatus = {
    jobId: row.job_id,
    type: row.job_type,
    status: row.status,
    priority: row.priority,
    attempts: row.attempts,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
  if (row.result != null) s.result = row.result;
  if (row.last_error && row.status !== 'succeeded') s.error = row.last_error;
  if (row.status_reason) s.statusReason = row.status_reason;
  if (row.next_attempt_at && row.status === 'retrying') s.nextAttemptAt = row.next_attempt_at.toISOString();
  if (row.notification_state) s.notification = row.notification_state;
  if (row.replay_of) s.replayOf = row.replay_of;
  if (row.first_started_at) s.queuedMs = Math.max(0, row.first_started_at.getTime() - row.created_at.getTime());
  if (row.dead_letter_id) s.deadLetterId = row.dead_letter_id;
  if (!FINAL.includes(row.status)) s.nextPollSeconds = row.status === 'deferred' ? 30 : row.status === 'retrying' ? 5 : 1;
  return s;
}
