import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AdminJobsService } from '../services/admin-jobs.js';
import { keyIdOf, operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { parseOr400 } from './problems.js';

export interface OperatorRouteDeps {
  jobs: AdminJobsService;
  adminApiKey: AdminKeys;
  /** Where the console links a job's workflow; null: no link. */
  temporalUi: { url: string; namespace: string } | null;
}

const JOB_PARAMS = z.object({ jobId: z.string().min(1).max(300, 'a job ID is at most 300 characters') });
const NO_QUERY = z.object({}).strict();

/** What the console needs besides the existing admin APIs: who am I, and a job search across tenants. */
export function registerOperatorRoutes(app: FastifyInstance, deps: OperatorRouteDeps): void {
  // The console's sign-in: which operator this key names (never the key; keyId is a hash prefix).
  app.get('/v1/admin/whoami', async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    parseOr400(NO_QUERY, req.query, 'query');
    return { operator: operatorOf(req), keyId: keyIdOf(req), temporalUi: deps.temporalUi };
  });

  app.get('/v1/admin/jobs', async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    // One keyset page (services/job-lists.ts): {jobs, nextCursor?, limit}.
    return deps.jobs.list(req.query);
  });

  app.get('/v1/admin/jobs/:jobId', async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const { jobId } = parseOr400(JOB_PARAMS, req.params, 'path');
    parseOr400(NO_QUERY, req.query, 'query');
    return deps.jobs.show(jobId);
  });
}
