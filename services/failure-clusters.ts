/**
 * Failure clusters (issue 38 §7): dead letters grouped by a normalized error signature (error
 * class, HTTP status, provider code, the message with IDs, numbers and UUIDs masked) x job type
 * x tenant, with count and first/last seen. A cluster's ID is a filter of the bulk actions
 * (`filter: { cluster }`): discarded, replayed or previewed as one request. HTTP-free.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { pgOr503 } from '../lib/db.js';
import { clusterSource, type ClusterSourceRow } from '../store/failure-clusters.js';

/** Dead letters read for one answer at most (newest failures first); beyond it the answer says `truncated`. */
export const MAX_CLUSTERED = 50_000;

const MASKS: Array<[RegExp, string]> = [
  // UUIDs first: their digit groups would otherwise be masked piecemeal.
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>'],
  // Our own IDs (job-…, dl-…, replay-…, bulk-…) with whatever suffix follows (-replay-2, -rerun-1).
  [/\b(?:job|dl|replay|bulk|sig|cl)-[0-9a-z]+(?:-[0-9a-z]+)*/gi, '<id>'],
  // Provider-style IDs: a short prefix, "_" and a token with a digit (req_8f3k2, ch_3Nq9, cus_x1).
  [/\b[a-z]{1,12}_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{4,}\b/g, '<id>'],
  // Long hex runs (hashes, trace IDs).
  [/\b[0-9a-f]{12,}\b/gi, '<hex>'],
  // ISO timestamps, then any remaining number (amounts, attempts, durations, ports), but not a
  // digit that is part of a word (the v1 of /v1/receipts names the endpoint, not an occurrence).
  [/\b\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?/g, '<time>'],
  [/(?<![A-Za-z])\d+(?:\.\d+)?/g, '<n>'],
];

/** The message with what varies between occurrences of one failure masked; whitespace collapsed. */
export function normalizeMessage(message: string): string {
  let m = message;
  for (const [re, mask] of MASKS) m = m.replace(re, mask);
  return m.replace(/\s+/g, ' ').trim().slice(0, 300);
}

export interface ErrorSignatureParts {
  errorClass: string;
  statusCode: number | null;
  providerCode: string | null;
  message: string;
}

/** The normalized signature of one failure: equal for failures that differ only in IDs and numbers. */
export function errorSignature(e: ErrorSignatureParts): { signature: string; normalized: string } {
  const normalized = normalizeMessage(e.message);
  const text = [e.errorClass, e.statusCode ?? '', e.providerCode ?? '', normalized].join('\u0000');
  return { signature: `sig-${createHash('sha256').update(text).digest('hex').slice(0, 16)}`, normalized };
}

/** A cluster: one signature within one job type and one tenant. */
export function clusterIdOf(signature: string, jobType: string, tenantId: string): string {
  return `cl-${createHash('sha256').update(`${signature}\u0000${jobType}\u0000${tenantId}`).digest('hex').slice(0, 20)}`;
}

export interface FailureCluster {
  clusterId: string;
  signature: string;
  errorClass: string;
  statusCode: number | null;
  providerCode: string | null;
  /** The normalized message (IDs and numbers masked). */
  message: string;
  /** One real message of the cluster (already redacted when it was recorded). */
  example: string;
  jobType: string;
  tenantId: string;
  count: number;
  firstSeen: string;
  lastSeen: string;
  /** Up to 5 dead letters of the cluster, newest first. */
  sampleIds: string[];
}

interface Grouped extends Omit<FailureCluster, 'firstSeen' | 'lastSeen'> {
  first: Date;
  last: Date;
  ids: string[];
}

function group(rows: ClusterSourceRow[]): Grouped[] {
  const by = new Map<string, Grouped>();
  for (const r of rows) {
    const parts = { errorClass: r.error_class, statusCode: r.status_code, providerCode: r.provider_code, message: r.message };
    const { signature, normalized } = errorSignature(parts);
    const clusterId = clusterIdOf(signature, r.job_type, r.tenant_id);
    let g = by.get(clusterId);
    if (!g) {
      g = {
        clusterId,
        signature,
        errorClass: r.error_class,
        statusCode: r.status_code,
        providerCode: r.provider_code,
        message: normalized,
        example: r.message,
        jobType: r.job_type,
        tenantId: r.tenant_id,
        count: 0,
        sampleIds: [],
        first: r.first_failure_at,
        last: r.last_failure_at,
        ids: [],
      };
      by.set(clusterId, g);
    }
    g.count++;
    g.ids.push(r.id);
    if (g.sampleIds.length < 5) g.sampleIds.push(r.id);
    if (r.first_failure_at < g.first) g.first = r.first_failure_at;
    if (r.last_failure_at > g.last) g.last = r.last_failure_at;
  }
  return [...by.values()];
}

export interface ClusterQuery {
  /** Dead-letter states to cluster. Default: open (what an operator still has to decide on). */
  states?: readonly string[];
  tenantId?: string;
  jobType?: string;
}

/** The clusters, largest first (ties: most recent first). */
export async function listClusters(
  pool: pg.Pool,
  q: ClusterQuery = {},
): Promise<{ clusters: FailureCluster[]; deadLetters: number; truncated: boolean }> {
  const rows = await pgOr503(() =>
    clusterSource(pool, { states: q.states ?? ['open'], tenantId: q.tenantId, jobType: q.jobType, limit: MAX_CLUSTERED + 1 }),
  );
  const truncated = rows.length > MAX_CLUSTERED;
  const groups = group(rows.slice(0, MAX_CLUSTERED)).sort((a, b) => b.count - a.count || b.last.getTime() - a.last.getTime());
  return {
    clusters: groups.map(({ first, last, ids: _ids, ...c }) => ({ ...c, firstSeen: first.toISOString(), lastSeen: last.toISOString() })),
    deadLetters: Math.min(rows.length, MAX_CLUSTERED),
    truncated,
  };
}

/** The dead letters of one cluster (by `clusterId`) or of one signature across types and tenants, newest first. */
export async function deadLettersOf(
  pool: pg.Pool,
  which: { cluster?: string; signature?: string; states?: readonly string[]; tenantId?: string; jobType?: string },
): Promise<ClusterSourceRow[]> {
  const rows = await pgOr503(() =>
    clusterSource(pool, { states: which.states ?? ['open'], tenantId: which.tenantId, jobType: which.jobType, limit: MAX_CLUSTERED }),
  );
  return rows.filter((r) => {
    const { signature } = errorSignature({
      errorClass: r.error_class,
      statusCode: r.status_code,
      providerCode: r.provider_code,
      message: r.message,
    });
    if (which.signature !== undefined && signature !== which.signature) return false;
    return which.cluster === undefined || clusterIdOf(signature, r.job_type, r.tenant_id) === which.cluster;
  });
}
