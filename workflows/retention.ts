import { log, proxyActivities } from '@temporalio/workflow';
import { autoUpgrade } from './versioning.js';
import type { SystemActivities } from '../activities/index.js';
import type { RetentionInput, RetentionReport } from '../contract/retention.js';

const cleanup = proxyActivities<SystemActivities>({
  startToCloseTimeout: '1h',
  // The activity heartbeats after every batch (one short DELETE).
  heartbeatTimeout: '1m',
  retry: { initialInterval: '5s', maximumInterval: '1m', maximumAttempts: 5 },
  summary: 'retention: delete expired rows in batches',
});

/** The scheduled retention cleanup (services/schedules.ts): the activity does the work; this only runs it. */
export async function retentionCleanup(input: RetentionInput): Promise<RetentionReport> {
  const report = await cleanup.cleanupRetention(input);
  log.info('retention cleanup finished', { ...report });
  return report;
}

// Auto-upgrade under Worker Versioning (workers/versioning.ts): its one activity may run for an
// hour, and its only command is that activity, so moving to the current build is always safe
// and lets the previous build's workers go without waiting for the cleanup.
autoUpgrade(retentionCleanup);
