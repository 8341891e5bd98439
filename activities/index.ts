import type pg from 'pg';
import type { Logger } from '../lib/logger.js';
import { createJobActivities } from './jobs.js';
import type { Provider } from './provider.js';

export interface ActivityDeps { pool: pg.Pool; provider: Provider; log: Logger; codeVersion: string }

/** All activities, wired with explicit dependencies. */
export function createActivities(deps: ActivityDeps) {
  return { ...createJobActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
