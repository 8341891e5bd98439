/**
 * Which job type an inbound event belongs to, and what its `webhook.route(event)` decided,
 * checked: the registry is the only list of subscriptions (`defineJob({ webhook })`). Pure, so
 * the receiver and the compensation scan's re-signal agree.
 */
import type { JobDefinition } from '../job-api/define.js';
import type { InboundEvent } from '../job-api/define-triggers.js';
import type { JobRegistry } from '../job-api/registry.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../lib/ids.js';
import { findUnstorableText } from '../lib/json-safety.js';

export type { InboundEvent } from '../job-api/define-triggers.js';

/** A route's decision, checked against its type. `tenantId`: the one the route named (only a source of no tenant may). */
export type RoutedEvent =
  | { kind: 'ignore' }
  | { kind: 'invalid'; detail: string }
  | { kind: 'start'; jobType: string; input: unknown; idempotencyKey: string; tenantId?: string }
  | {
      kind: 'signal';
      jobType: string;
      name: string;
      arg: unknown;
      target: { step: string; providerId: string } | { idempotencyKey: string };
      tenantId?: string;
    };

export interface WebhookRoutes {
  /** The type subscribed to this source's events of this type, if any. */
  subscriber(source: string, eventType: string): JobDefinition | undefined;
}

const key = (source: string, eventType: string) => `${source}\n${eventType}`;
const TENANT_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** The subscriptions of a registry; two types subscribed to the same source's same event type is a configuration error. */
export function webhookRoutes(registry: Pick<JobRegistry, 'modules'>): WebhookRoutes {
  const byEvent = new Map<string, JobDefinition>();
  for (const { definition: d } of registry.modules) {
    for (const type of d.webhook?.events ?? []) {
      const other = byEvent.get(key(d.webhook!.source, type));
      if (other)
        throw new Error(
          `job types ${other.name} and ${d.name} both route event ${type} of webhook source ${d.webhook!.source}: one event goes to one type`,
        );
      byEvent.set(key(d.webhook!.source, type), d);
    }
  }
  return { subscriber: (source, eventType) => byEvent.get(key(source, eventType)) };
}

function checkTenant(d: JobDefinition, tenantId: unknown): string | undefined {
  if (tenantId === undefined || (typeof tenantId === 'string' && TENANT_ID.test(tenantId))) return undefined;
  return `the route of job type ${d.name} named a tenant that is not a tenant ID`;
}

function checkStart(d: JobDefinition, start: { input: unknown; idempotencyKey: unknown; tenantId?: unknown }): RoutedEvent {
  if (typeof start.idempotencyKey !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(start.idempotencyKey))
    return {
      kind: 'invalid',
      detail: `the route of job type ${d.name} made an idempotency key that is not 8-255 visible ASCII characters`,
    };
  const parsed = d.input.safeParse(start.input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      kind: 'invalid',
      detail: `the event makes an invalid ${d.name} input: input.${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`,
    };
  }
  const unstorable = findUnstorableText(parsed.data, 'input');
  if (unstorable)
    return { kind: 'invalid', detail: `the event makes an invalid ${d.name} input: ${unstorable.path} ${unstorable.message}` };
  const badTenant = checkTenant(d, start.tenantId);
  if (badTenant) return { kind: 'invalid', detail: badTenant };
  return {
    kind: 'start',
    jobType: d.name,
    input: parsed.data,
    idempotencyKey: start.idempotencyKey,
    ...(start.tenantId !== undefined ? { tenantId: start.tenantId as string } : {}),
  };
}

function checkSignal(
  d: JobDefinition,
  s: { name: unknown; arg: unknown; job: { step?: unknown; providerId?: unknown; idempotencyKey?: unknown }; tenantId?: unknown },
): RoutedEvent {
  if (typeof s.name !== 'string' || s.name.length === 0 || s.name.length > 200)
    return { kind: 'invalid', detail: `the route of job type ${d.name} named no signal` };
  const badTenant = checkTenant(d, s.tenantId);
  if (badTenant) return { kind: 'invalid', detail: badTenant };
  const tenant = s.tenantId !== undefined ? { tenantId: s.tenantId as string } : {};
  const base = { kind: 'signal' as const, jobType: d.name, name: s.name, arg: s.arg ?? null, ...tenant };
  if ('idempotencyKey' in s.job) {
    if (typeof s.job.idempotencyKey !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(s.job.idempotencyKey))
      return { kind: 'invalid', detail: `the route of job type ${d.name} named a job by a key that is not 8-255 visible ASCII characters` };
    return { ...base, target: { idempotencyKey: s.job.idempotencyKey } };
  }
  if (typeof s.job.step !== 'string' || !d.effects.includes(s.job.step))
    return { kind: 'invalid', detail: `the route of job type ${d.name} named a step it does not declare` };
  if (typeof s.job.providerId !== 'string' || s.job.providerId.length === 0 || s.job.providerId.length > 200)
    return { kind: 'invalid', detail: `the route of job type ${d.name} named no provider object (1-200 characters)` };
  return { ...base, target: { step: s.job.step, providerId: s.job.providerId } };
}

/**
 * Routes a verified event: no subscriber or a route that returns nothing is `ignore`; a route
 * that throws is `invalid` (its message is not repeated: it may quote the event).
 */
export function routeEvent(routes: WebhookRoutes, event: InboundEvent): RoutedEvent {
  const d = routes.subscriber(event.source, event.type);
  if (!d?.webhook) return { kind: 'ignore' };
  let r;
  try {
    r = d.webhook.route(event);
  } catch {
    return { kind: 'invalid', detail: `the route of job type ${d.name} could not handle the event` };
  }
  if (r === undefined || r === null) return { kind: 'ignore' };
  if ('invalid' in r) return { kind: 'invalid', detail: String(r.invalid) };
  if ('start' in r) return checkStart(d, r.start);
  if ('signal' in r) return checkSignal(d, r.signal);
  return { kind: 'invalid', detail: `the route of job type ${d.name} returned neither start nor signal` };
}
