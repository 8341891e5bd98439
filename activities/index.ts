import type { JobRegistry } from '../job-api/registry.js';
import { createAdmissionActivities } from './admission.js';
import { createBookkeepingActivities } from './bookkeeping.js';
import { createBulkActionActivities } from './bulk-actions.js';
import { createDeadLetterActivities } from './dead-letters.js';
import type { ActivityDeps } from './deps.js';
import { withLeaseTracking } from './lease-tracking.js';
import { createOutboxActivities } from './outbox.js';
import { createRetentionActivities } from './retention.js';
import { createScanRepairActivities } from './scan-repairs.js';
import { createScanActivities } from './scan.js';
import { createScheduleActivities } from './schedules.js';

export type { ActivityDeps } from './deps.js';

/** The product's own activities (every job type shares them), wired with explicit dependencies. */
export function createSystemActivities(deps: ActivityDeps) {
  return {
    ...createBookkeepingActivities(deps),
    ...createOutboxActivities(deps),
    ...createDeadLetterActivities(deps),
    ...createScheduleActivities(deps),
    ...createScanActivities(deps),
    ...createScanRepairActivities(deps),
    ...createAdmissionActivities(deps),
    ...createRetentionActivities(deps),
    ...createBulkActionActivities(deps),
  };
}

export type SystemActivities = ReturnType<typeof createSystemActivities>;

/** Every activity a worker registers: the system's and each registered job type's. */
export function createActivities(deps: ActivityDeps, jobs: JobRegistry = deps.jobs) {
  const all: Record<string, (...args: never[]) => Promise<unknown>> = { ...createSystemActivities(deps) };
  const steps = new Set<string>();
  for (const m of jobs.modules) {
    for (const [name, fn] of Object.entries(m.activities(deps))) {
      if (name in all) throw new Error(`job type ${m.definition.name}: activity type ${name} is already registered`);
      all[name] = fn;
      steps.add(name);
    }
  }
  // Lease tracking wraps every activity; it only records the leased (heartbeating) ones. Job
  // steps (`runStep`) write their lease rows inside their own transactions.
  return withLeaseTracking(deps, all, steps);
}
