import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AdminJobsService } from '../services/admin-jobs.js';
import { keyIdOf, operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { access, principalOf, requireTenantInScope, ROLE_RIGHTS, roleAllows, ROLES, scopeQuery } from './roles.js';
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
  // The console's sign-in: which operator this key (or session) names, its role and tenants
  // (the console hides what the role may not do), never the key (keyId is a hash prefix).
  app.get('/v1/admin/whoami', access('viewer', 'any'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    parseOr400(NO_QUERY, req.query, 'query');
    const p = principalOf(req)!;
    return {
      operator: operatorOf(req),
      keyId: keyIdOf(req),
      role: p.role,
      tenants: p.tenants ?? null,
      may: ROLES.filter((r) => roleAllows(p.role, r)).map((r) => ROLE_RIGHTS[r]),
      via: p.via,
      temporalUi: deps.temporalUi,
    };
  });

  app.get('/v1/admin/jobs', access('viewer', 'checked'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    // One keyset page (services/job-lists.ts): {jobs, nextCursor?, limit}.
    return deps.jobs.list(scopeQuery(req, req.query));
  });

  app.get('/v1/admin/jobs/:jobId', access('viewer', 'checked'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const { jobId } = parseOr400(JOB_PARAMS, req.params, 'path');
    parseOr400(NO_QUERY, req.query, 'query');
    const job = await deps.jobs.show(jobId);
    requireTenantInScope(req, job.tenantId, `job ${jobId}`);
    return job;
  });
}
