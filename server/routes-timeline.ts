import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { z } from 'zod';
import { pgOr503 } from '../lib/db.js';
import { ValidationError } from '../lib/errors.js';
import { jobTimeline } from '../services/timeline.js';
import { requireAdmin, type AdminKeys } from './auth.js';
import { access, requireTenantInScope } from './roles.js';
import { parseOr400 } from './problems.js';

const PARAMS = z.object({ jobId: z.string().min(1).max(300, 'a job ID is at most 300 characters') });

/** `GET /v1/admin/jobs/{jobId}/timeline`: one job's events across Postgres and Temporal, with its stage verdict. */
export function registerTimelineRoutes(
  app: FastifyInstance,
  deps: { pool: pg.Pool; temporal: Client; taskQueue: string; adminApiKey: AdminKeys; traceUiUrl?: string | undefined },
): void {
  app.get('/v1/admin/jobs/:jobId/timeline', access('viewer', 'checked'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const { jobId } = parseOr400(PARAMS, req.params, 'path');
    const unknown = Object.keys((req.query ?? {}) as Record<string, unknown>);
    if (unknown.length > 0)
      throw new ValidationError(
        'invalid query',
        unknown.map((k) => ({ path: k, message: "unknown query parameter; the timeline takes none (the CLI's --json is the same JSON)" })),
      );
    const timeline = await pgOr503(() => jobTimeline(deps, jobId));
    requireTenantInScope(req, timeline.tenantId, `job ${jobId}`);
    return timeline;
  });
}
