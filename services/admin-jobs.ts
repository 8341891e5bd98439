/**
 * Operators find jobs across tenants (the console's search, `GET /v1/admin/jobs`,
 * `npm run job -- list`): by job ID, tenant, type, state, creation time or tag, newest first,
 * one keyset page at a time (services/job-lists.ts). Each job reads as its tenant sees it
 * (`toJobStatus`), plus the tenant; never the input.
 */
import type pg from 'pg';
import { pgOr503 } from '../lib/db.js';
import { NotFoundError } from '../lib/errors.js';
import { operatorIntent, type FoundIntent } from '../store/intents.js';
import { ADMIN_LIST_QUERY, listPage, parseListQuery, type JobPage } from './job-lists.js';
import { toJobStatus, type JobStatus } from './job-status.js';

export type AdminJobView = JobStatus & { tenantId: string };

const view = (row: FoundIntent, now = new Date()): AdminJobView => ({ tenantId: row.tenant_id, ...toJobStatus(row, now) });

export function createAdminJobsService(deps: { pool: pg.Pool }) {
  return {
    /** One page; `query` is the HTTP query as received (a bad filter is a 400 naming it). */
    async list(query: unknown): Promise<JobPage<AdminJobView>> {
      return listPage(deps.pool, { name: 'admin' }, parseListQuery(ADMIN_LIST_QUERY, query), view);
    },
    async show(jobId: string): Promise<AdminJobView> {
      const row = await pgOr503(() => operatorIntent(deps.pool, jobId));
      if (!row) throw new NotFoundError(`job ${jobId} not found`);
      return view(row);
    },
  };
}
export type AdminJobsService = ReturnType<typeof createAdminJobsService>;
