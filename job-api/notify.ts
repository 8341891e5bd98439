/**
 * What a job type sends when a job succeeds (`defineJob({ notify })`, docs/effects-and-upstreams.md
 * "Notifications"). Each target is an outbox row written in the result's transaction and
 * delivered afterwards as its own effect (`<jobId>:notify-<target>`): a failed delivery is a
 * failed notification with evidence, never an unfinished job. Workflow-safe: plain data and
 * pure functions (the definition is bundled into the workflow sandbox).
 */

/** An e-mail a job type sends: plain text. */
export interface EmailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface NotifyOptions<I> {
  /**
   * Post a signed `job.succeeded` event (Standard Webhooks) to the tenant's completion webhook
   * (`PUT /v1/admin/tenants/{id}/completion-webhook`), when the tenant has one set. `true`
   * sends the job's ID, type, tenant and status; `{ includeResult: true }` adds its result
   * (the tenant may read it anyway; leave it out when it is large). Default: none.
   */
  completionWebhook?: boolean | { includeResult?: boolean };
  /**
   * The e-mail a succeeded job sends, from its input and result, or undefined for none
   * (sent over SMTP with `SMTP_URL`, else to the simulator). Pure: it may run again on a retry
   * of the step. Default: none.
   */
  email?: (input: I, result: unknown, job: NotifiedJob) => EmailMessage | undefined;
}

/** The job a notification is about. */
export interface NotifiedJob {
  jobId: string;
  jobType: string;
  tenantId: string;
}

export interface JobNotify<I> {
  /** null: no completion webhook. */
  readonly completionWebhook: { includeResult: boolean } | null;
  readonly email: ((input: I, result: unknown, job: NotifiedJob) => EmailMessage | undefined) | null;
}

/** The outbox kinds, also the effect steps `notify-<kind>`. */
export type NotificationKind = 'email' | 'completion-webhook';

export function resolveNotify<I>(jobType: string, o: NotifyOptions<I>): JobNotify<I> {
  for (const k of Object.keys(o)) {
    if (k !== 'completionWebhook' && k !== 'email')
      throw new Error(`job type ${jobType}: notify.${k} is not a notification target (completionWebhook, email)`);
  }
  if (o.email !== undefined && typeof o.email !== 'function')
    throw new Error(`job type ${jobType}: notify.email must be a function (input, result) => { to, subject, text } | undefined`);
  const hook = o.completionWebhook;
  return {
    completionWebhook: hook === undefined || hook === false ? null : { includeResult: hook !== true && hook.includeResult === true },
    email: o.email ?? null,
  };
}

/** The `job.succeeded` event's body (Standard Webhooks: `type`, `timestamp`, `data`). No input, no idempotency key. */
export interface CompletionEvent {
  type: 'job.succeeded';
  /** When the job's result was written (UTC), the same on every delivery attempt. */
  timestamp: string;
  data: { jobId: string; type: string; tenantId: string; status: 'succeeded'; result?: unknown };
}

/**
 * The outbox rows a succeeded job writes (pure): the e-mail if the type's function gives one,
 * and the completion event if the type declares it and the tenant has an endpoint.
 */
export function plannedNotifications<I>(
  notify: JobNotify<I> | null,
  job: { jobId: string; jobType: string; tenantId: string; input: I; result: unknown; at: Date; tenantHasWebhook: boolean },
): Array<{ kind: NotificationKind; payload: Record<string, unknown> }> {
  const rows: Array<{ kind: NotificationKind; payload: Record<string, unknown> }> = [];
  const email = notify?.email?.(job.input, job.result, { jobId: job.jobId, jobType: job.jobType, tenantId: job.tenantId });
  if (email) rows.push({ kind: 'email', payload: { to: email.to, subject: email.subject, text: email.text } });
  if (notify?.completionWebhook && job.tenantHasWebhook) {
    const data: CompletionEvent['data'] = { jobId: job.jobId, type: job.jobType, tenantId: job.tenantId, status: 'succeeded' };
    if (notify.completionWebhook.includeResult) data.result = job.result;
    const event: CompletionEvent = { type: 'job.succeeded', timestamp: job.at.toISOString(), data };
    rows.push({ kind: 'completion-webhook', payload: event as unknown as Record<string, unknown> });
  }
  return rows;
}
