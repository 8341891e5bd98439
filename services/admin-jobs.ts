/**
 * Operators find jobs across tenants (the console's search, `GET /v1/admin/jobs`): by job ID,
 * tenant, type or state, newest first. Each job reads as its tenant sees it (`toJobStatus`),
 * plus the tenant; never the input.
 */
import type pg from 'pg';
import { z } from 'zod';
import { JOB_STATES, type JobState } from '../contract/job-types.js';
import { pgOr503 } from '../lib/db.js';
import { NotFoundError } from '../lib/errors.js';
import { searchIntents, type FoundIntent } from '../store/intents.js';
import { toJobStatus, type JobStatus } from './job-status.js';

const shortText = z.string().trim().min(1).max(300);
export const ADMIN_JOBS_QUERY = z
  .object({
    jobId: shortText.optional(),
    tenantId: shortText.optional(),
    type: shortText.optional(),
    state: z.enum(JOB_STATES, { error: `one of ${JOB_STATES.join(', ')}` }).optional(),
    limit: z.coerce
      .number({ error: 'a whole number 1-200' })
      .int('a whole number 1-200')
      .min(1, 'a whole number 1-200')
      .max(200, 'a whole number 1-200')
      .default(50),
  })
  .strict();
export type AdminJobsQuery = z.infer<typeof ADMIN_JOBS_QUERY>;

export type AdminJobView = JobStatus & { tenantId: string };

const view = (row: FoundIntent): AdminJobView => ({ tenantId: row.tenant_id, ...toJobStatus(row) });

export function createAdminJobsService(deps: { pool: pg.Pool }) {
  return {
    async list(q: AdminJobsQuery): Promise<AdminJobView[]> {
      const rows = await pgOr503(() =>
        searchIntents(deps.pool, {
          jobId: q.jobId,
          tenantId: q.tenantId,
          jobType: q.type,
          status: q.state as JobState | undefined,
          limit: q.limit,
        }),
      );
      return rows.map(view);
    },
    async show(jobId: string): Promise<AdminJobView> {
      const [row] = await pgOr503(() => searchIntents(deps.pool, { jobId, limit: 1 }));
      if (!row) throw new NotFoundError(`job ${jobId} not found`);
      return view(row);
    },
  };
}
export type AdminJobsService = ReturnType<typeof createAdminJobsService>;
