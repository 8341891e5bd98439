/**
 * Job lists, one page at a time: a tenant's own (`GET /v1/jobs`, the client's `listJobs`) and
 * the operators' across tenants (`GET /v1/admin/jobs`, the console, `npm run job -- list`).
 * One filter schema for the HTTP query and the typed client; an opaque cursor for the next page.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';
import { JOB_STATES, type JobState } from '../contract/job-types.js';
import { canonicalJson } from '../lib/canonical-json.js';
import { pgOr503 } from '../lib/db.js';
import { ValidationError, type FieldIssue } from '../lib/errors.js';
import { zodFieldIssues } from '../lib/validation.js';
import { pageIntents, type PageFilter, type PagePosition, type PageRow } from '../store/job-pages.js';
import { toJobStatus, type JobStatus } from './job-status.js';
import { TAG_KEY_PATTERN, TAG_VALUE_PATTERN } from './submit-options.js';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

const STATE_RULE = `one or more of ${JOB_STATES.join(', ')} (repeat the parameter or separate with commas)`;
const TIME_RULE = 'an ISO 8601 date-time with a zone, e.g. 2030-01-01T09:00:00Z';
const shortText = z.string().trim().min(1, 'must not be empty').max(300, 'at most 300 characters');
const time = z.union([z.date(), z.iso.datetime({ offset: true, error: TIME_RULE })], { error: TIME_RULE }).transform((v, ctx) => {
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) {
    ctx.addIssue({ code: 'custom', message: TIME_RULE });
    return z.NEVER;
  }
  return d;
});
const states = z
  .union([z.string(), z.array(z.string())], { error: STATE_RULE })
  .transform((v) => (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).map((s) => s.trim()))
  .pipe(z.array(z.enum(JOB_STATES, { error: STATE_RULE })).min(1, STATE_RULE));
const tag = z.string({ error: 'key:value' }).transform((v, ctx) => {
  const i = v.indexOf(':');
  const key = i < 0 ? '' : v.slice(0, i);
  const value = i < 0 ? '' : v.slice(i + 1);
  if (!TAG_KEY_PATTERN.test(key) || !TAG_VALUE_PATTERN.test(value)) {
    ctx.addIssue({ code: 'custom', message: 'key:value, the key 1-64 letters, digits, "_", "." or "-", the value 1-200 characters' });
    return z.NEVER;
  }
  return { key, value };
});
const limit = z.coerce
  .number({ error: `a whole number 1-${MAX_PAGE_SIZE}` })
  .int(`a whole number 1-${MAX_PAGE_SIZE}`)
  .min(1, `a whole number 1-${MAX_PAGE_SIZE}`)
  .max(MAX_PAGE_SIZE, `a whole number 1-${MAX_PAGE_SIZE}`)
  .default(DEFAULT_PAGE_SIZE);

const COMMON = {
  state: states.optional(),
  type: shortText.optional(),
  createdAfter: time.optional(),
  createdBefore: time.optional(),
  tag: tag.optional(),
  limit,
  cursor: z.string().max(1000, 'at most 1000 characters').optional(),
};

/** `GET /v1/jobs`'s query and `listJobs`'s filter. */
export const TENANT_LIST_QUERY = z.object(COMMON).strict();
/** `GET /v1/admin/jobs`'s query: the same, across tenants, plus a tenant and a job ID. */
export const ADMIN_LIST_QUERY = z.object({ ...COMMON, tenantId: shortText.optional(), jobId: shortText.optional() }).strict();

/** What `listJobs` takes: the query's parameters, typed. */
export interface ListJobsFilter {
  state?: JobState | JobState[];
  type?: string;
  createdAfter?: Date | string;
  createdBefore?: Date | string;
  /** `key:value`: jobs submitted with this tag. */
  tag?: string;
  /** Default 50, at most 200. */
  limit?: number;
  /** `nextCursor` of the previous page, with the same filter. */
  cursor?: string;
}

export interface JobPage<J = JobStatus> {
  jobs: J[];
  /** Absent on the last page. */
  nextCursor?: string;
  limit: number;
}

type Parsed = z.infer<typeof ADMIN_LIST_QUERY>;

/** Parses a query or a filter, or throws a 400 naming each bad parameter. */
export function parseListQuery(schema: typeof TENANT_LIST_QUERY | typeof ADMIN_LIST_QUERY, raw: unknown): Parsed {
  const allowed = Object.keys(schema.shape).join(', ');
  const r = schema.safeParse(raw ?? {});
  if (!r.success) {
    // Each issue names the query parameter (`state`, not `state.1` for the second of several).
    const issues = zodFieldIssues(r.error, undefined, `unknown filter; allowed: ${allowed}`);
    throw new ValidationError(
      'invalid list filter',
      issues.map((i) => ({ ...i, path: i.path.split('.')[0]! })),
    );
  }
  const q = r.data as Parsed;
  if (q.createdAfter && q.createdBefore && q.createdAfter >= q.createdBefore) {
    throw new ValidationError('invalid list filter', [{ path: 'createdAfter', message: 'must be before createdBefore' }]);
  }
  return q;
}

// ---- the cursor ----

/**
 * The cursor is base64url of {v, at, id, q}: the last row's position (creation time in
 * microseconds, job ID) and a hash of the list it belongs to (who asks and the filter, not the
 * page size). A cursor of another list (another tenant's, another filter) is refused with a
 * 400 rather than answering a page of a list the client did not ask for. It is not signed: a
 * forged position only starts the same list elsewhere, and the tenant's own scope is always
 * applied on top, so it can never reach another tenant's jobs.
 */
function listHash(scope: string, q: Parsed): string {
  const { limit: _limit, cursor: _cursor, ...filter } = q;
  void _limit;
  void _cursor;
  // Through JSON first: the times become their ISO text (canonicalJson reads a Date as {}).
  return createHash('sha256')
    .update(`${scope}\u0000${canonicalJson(JSON.parse(JSON.stringify(filter)))}`)
    .digest('base64url')
    .slice(0, 16);
}

export function encodeCursor(scope: string, q: Parsed, p: PagePosition): string {
  return Buffer.from(JSON.stringify({ v: 1, at: p.createdUs, id: p.jobId, q: listHash(scope, q) })).toString('base64url');
}

const CURSOR_SHAPE = z
  .object({ v: z.literal(1), at: z.string().regex(/^-?\d{1,19}$/), id: z.string().min(1).max(300), q: z.string() })
  .strict();

export function decodeCursor(scope: string, q: Parsed, cursor: string): PagePosition {
  const bad = (message: string): never => {
    throw new ValidationError('invalid cursor', [{ path: 'cursor', message } satisfies FieldIssue]);
  };
  let decoded: unknown;
  try {
    decoded = /^[A-Za-z0-9_-]+$/.test(cursor) ? JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) : undefined;
  } catch {
    decoded = undefined;
  }
  const c = CURSOR_SHAPE.safeParse(decoded);
  if (!c.success) return bad('not a cursor this API issued; pass nextCursor of the previous page unchanged');
  if (c.data.q !== listHash(scope, q))
    return bad('issued for another list (another filter or caller); use it with the filter it came with');
  return { createdUs: c.data.at, jobId: c.data.id };
}

// ---- one page ----

/**
 * One page of jobs, newest first. `scope`: `tenant:<id>` for a tenant's own list (its ID is
 * always a filter), `admin` across tenants. `view` shapes a row (a tenant's status, or an
 * operator's with the tenant).
 */
export async function listPage<J>(
  pool: pg.Pool,
  scope: { tenantId?: string; name: string },
  q: Parsed,
  view: (row: PageRow, now: Date) => J,
): Promise<JobPage<J>> {
  const f: PageFilter = {
    tenantId: scope.tenantId ?? q.tenantId,
    jobId: q.jobId,
    jobType: q.type,
    states: q.state,
    createdAfter: q.createdAfter,
    createdBefore: q.createdBefore,
    tag: q.tag,
    after: q.cursor === undefined ? undefined : decodeCursor(scope.name, q, q.cursor),
    limit: q.limit,
  };
  const page = await pgOr503(() => pageIntents(pool, f));
  const now = new Date();
  return {
    jobs: page.rows.map((row) => view(row, now)),
    ...(page.next ? { nextCursor: encodeCursor(scope.name, q, page.next) } : {}),
    limit: q.limit,
  };
}

/** A tenant's own jobs: as `getJob` shows each, never the input. */
export function listTenantJobs(pool: pg.Pool, tenantId: string, q: Parsed): Promise<JobPage> {
  return listPage(pool, { tenantId, name: `tenant:${tenantId}` }, q, (row, now) => toJobStatus(row, now));
}
